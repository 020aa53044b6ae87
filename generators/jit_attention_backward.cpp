#include "jit_attention_backward.h"

namespace attnforge {

namespace {

const AttentionSpec& with_backward(const AttentionSpec& spec) {
  if (auto misfit = backward_misfit(spec)) throw *misfit;
  return spec;
}

}  // namespace

JitAttentionBackward::JitAttentionBackward(const AttentionSpec& spec, const Halide::Target& target,
                                           const std::map<std::string, std::string>& extra_params,
                                           const Halide::AutoschedulerParams& autoscheduler)
    : spec_(with_backward(spec)),
      callable_(compile_generator("attention_backward", spec.to_string(), target, extra_params,
                                  autoscheduler)) {}

void JitAttentionBackward::run(BackwardArguments& args) const {
  KernelArgv argv = backward_argv(spec_, args);
  call_jit(callable_, argv, spec_.to_string() + " backward");
}

}  // namespace attnforge
