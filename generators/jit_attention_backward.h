// Compiles the attention backward Generator in-process (JIT) for one spec and
// target, and runs it with spec/backward_arguments.h's arguments.
#pragma once

#include <Halide.h>

#include <map>
#include <string>

#include "jit_compile.h"
#include "spec/attention_spec.h"
#include "spec/backward_arguments.h"

namespace attnforge {

class JitAttentionBackward {
 public:
  // Throws SpecError for a spec with no backward kernel (backward_misfit).
  // extra_params: further GeneratorParams by name (schedule, estimate_*);
  // with an autoscheduler (its plugin loaded), pass schedule=auto.
  JitAttentionBackward(const AttentionSpec& spec, const Halide::Target& target,
                       const std::map<std::string, std::string>& extra_params = {},
                       const Halide::AutoschedulerParams& autoscheduler = {});

  // Writes dq, dk and dv; a Halide error (e.g. a shape mismatch) throws KernelError.
  void run(BackwardArguments& args) const;

  const AttentionSpec& spec() const { return spec_; }

 private:
  AttentionSpec spec_;
  Halide::Callable callable_;
  bool gpu_ = false;  // the kernel takes bf16 as its bits (KernelStorageTypes)
};

}  // namespace attnforge
