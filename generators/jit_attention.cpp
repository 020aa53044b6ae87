#include "jit_attention.h"

#include <fmt/format.h>

#include "algorithm/modifier_registry.h"

namespace attnforge {

JitAttention::JitAttention(const AttentionSpec& spec, const Halide::Target& target,
                           const std::map<std::string, std::string>& extra_params,
                           const Halide::AutoschedulerParams& autoscheduler)
    : spec_(spec),
      cuda_(target.has_feature(Halide::Target::CUDA)),
      callable_(
          compile_generator("attention", spec.to_string(), target, extra_params, autoscheduler)) {}

void JitAttention::run(KernelArguments& args) const {
  // The kernel takes exactly its modifier's tensors: a count off by one
  // would shift every argument after them.
  const size_t declared = spec_.modified() ? modifier_of(spec_).tensors.size() : 0;
  if (args.modifier_tensor_count != declared) {
    throw SpecError("modifier_tensors",
                    fmt::format("{}: {} modifier tensors given; its modifier declares {}",
                                spec_.to_string(), args.modifier_tensor_count, declared));
  }
  mark_host_inputs_dirty(args);
  KernelArgv argv = kernel_argv(spec_, args);
  {
    KernelStorageTypes as_taken(args, cuda_);
    call_jit(callable_, argv, spec_.to_string());
  }
  // GPU kernels run asynchronously: a run ends when its outputs are written.
  for (halide_buffer_t* output : {args.out, args.weights}) {
    if (output && output->device && output->device_interface) {
      if (int error = output->device_interface->device_sync(nullptr, output)) {
        throw KernelError(spec_.to_string() + ": device sync failed with Halide error " +
                          std::to_string(error));
      }
    }
  }
}

void JitAttention::set_num_threads(int threads) {
  Halide::Internal::JITSharedRuntime::set_num_threads(threads);
}

}  // namespace attnforge
