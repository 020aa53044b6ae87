// In-process (JIT) compiles of a registered Generator, and calls of the result
// with the same argv an AOT kernel takes.
#pragma once

#include <Halide.h>

#include <map>
#include <stdexcept>
#include <string>

#include "spec/kernel_arguments.h"

namespace attnforge {

// A Halide compile or run-time error, with Halide's message.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sets GeneratorParam spec=`spec` and `params` (further GeneratorParams by
// name) on Generator `name` and compiles it; with an autoscheduler (its plugin
// loaded), pass schedule=auto. Throws KernelError naming the spec.
Halide::Callable compile_generator(const std::string& name, const std::string& spec,
                                   const Halide::Target& target,
                                   const std::map<std::string, std::string>& params,
                                   const Halide::AutoschedulerParams& autoscheduler = {});

// Runs `callable` on `argv`; a Halide error or failure status throws KernelError prefixed with
// `label`.
void call_jit(const Halide::Callable& callable, KernelArgv& argv, const std::string& label);

}  // namespace attnforge
