// Compiles the attention Generator in-process (JIT) for one spec, schedule and
// target, and runs it with the same arguments an AOT kernel takes.
#pragma once

#include <Halide.h>

#include <map>
#include <stdexcept>
#include <string>

#include "jit_compile.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge {

class JitAttention {
 public:
  // extra_params: further GeneratorParams (e.g. schedule) by name. With an
  // autoscheduler (its plugin loaded), pass schedule=auto.
  JitAttention(const AttentionSpec& spec, const Halide::Target& target,
               const std::map<std::string, std::string>& extra_params = {},
               const Halide::AutoschedulerParams& autoscheduler = {});

  // Runs the kernel; a Halide error (e.g. a shape mismatch) throws KernelError.
  void run(KernelArguments& args) const;

  const AttentionSpec& spec() const { return spec_; }

  // Threads of the JIT runtime's pool, shared by every JIT kernel (0: one per core).
  static void set_num_threads(int threads);

 private:
  AttentionSpec spec_;
  bool cuda_ = false;  // the kernel takes bf16 as its bits (KernelStorageTypes)
  Halide::Callable callable_;
};

}  // namespace attnforge
