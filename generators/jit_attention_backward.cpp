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
                                  autoscheduler)),
      gpu_(target.has_gpu_feature()) {}

void JitAttentionBackward::run(BackwardArguments& args) const {
  mark_host_inputs_dirty(args);
  KernelArgv argv = backward_argv(spec_, args);
  {
    // GPU kernels take bf16 tensors as their bits.
    KernelStorageTypes as_taken({args.q, args.k, args.v, args.out, args.d_out, args.bias, args.dq,
                                 args.dk, args.dv, args.d_bias},
                                gpu_);
    call_jit(callable_, argv, spec_.to_string() + " backward");
  }
  // GPU kernels run asynchronously: a run ends when its gradients are written.
  for (halide_buffer_t* gradient : {args.dq, args.dk, args.dv, args.d_bias}) {
    if (gradient && gradient->device && gradient->device_interface) {
      if (int error = gradient->device_interface->device_sync(nullptr, gradient)) {
        throw KernelError(spec_.to_string() + " backward: device sync failed with Halide error " +
                          std::to_string(error));
      }
    }
  }
}

}  // namespace attnforge
