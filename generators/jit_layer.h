// Compiles the layer Generator in-process (JIT) for one spec, schedule and
// target, and runs it with the same arguments an AOT layer kernel takes.
#pragma once

#include <Halide.h>

#include <map>
#include <string>

#include "jit_compile.h"
#include "spec/layer_arguments.h"
#include "spec/layer_spec.h"

namespace attnforge {

class JitLayer {
 public:
  // extra_params: further GeneratorParams (e.g. schedule) by name.
  JitLayer(const LayerSpec& spec, const Halide::Target& target,
           const std::map<std::string, std::string>& extra_params = {});

  // Runs the layer; a Halide error (e.g. a shape mismatch) throws KernelError.
  void run(LayerArguments& args) const;

  const LayerSpec& spec() const { return spec_; }

 private:
  LayerSpec spec_;
  Halide::Callable callable_;
};

}  // namespace attnforge
