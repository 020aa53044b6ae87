#include "jit_attention.h"

namespace attnforge {

JitAttention::JitAttention(const AttentionSpec& spec, const Halide::Target& target,
                           const std::map<std::string, std::string>& extra_params,
                           const Halide::AutoschedulerParams& autoscheduler)
    : spec_(spec),
      callable_(
          compile_generator("attention", spec.to_string(), target, extra_params, autoscheduler)) {}

void JitAttention::run(KernelArguments& args) const {
  KernelArgv argv = kernel_argv(spec_, args);
  call_jit(callable_, argv, spec_.to_string());
}

void JitAttention::set_num_threads(int threads) {
  Halide::Internal::JITSharedRuntime::set_num_threads(threads);
}

}  // namespace attnforge
