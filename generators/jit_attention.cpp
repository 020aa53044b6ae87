#include "jit_attention.h"

#include <fmt/format.h>

#include "algorithm/modifier_key_ranges.h"
#include "algorithm/modifier_registry.h"

namespace attnforge {

JitAttention::JitAttention(const AttentionSpec& spec, const Halide::Target& target,
                           const std::map<std::string, std::string>& extra_params,
                           const Halide::AutoschedulerParams& autoscheduler)
    : spec_(spec),
      cuda_(target.has_feature(Halide::Target::CUDA)),
      callable_(
          compile_generator("attention", spec.to_string(), target, extra_params, autoscheduler)) {
  if (has_mask_rule(spec)) {
    const Halide::Target cpu = target.has_gpu_feature() ? Halide::get_host_target() : target;
    key_ranges_ = compile_generator("key_ranges", spec.to_string(), cpu, {});
  }
}

Halide::Runtime::Buffer<int32_t> JitAttention::key_range_table(const KernelArguments& args,
                                                               int32_t& kv_len) const {
  if (!key_ranges_) {
    throw SpecError("modifier_key_ranges",
                    spec_.to_string() + " has no modifier with a mask rule, so no key ranges");
  }
  const auto* q = static_cast<const halide_buffer_t*>(required_argument(args.q, "q"));
  if (spec_.paged()) {
    const auto* table =
        static_cast<const halide_buffer_t*>(required_argument(args.page_table, "page_table"));
    kv_len = table->dim[0].extent * spec_.page_size;
  } else {
    kv_len = static_cast<const halide_buffer_t*>(required_argument(args.k, "k"))->dim[1].extent;
  }
  return Halide::Runtime::Buffer<int32_t>(kKeyRangeValues, q->dim[1].extent, kKeyRangeLevels,
                                          key_range_heads(spec_), q->dim[3].extent);
}

Halide::Runtime::Buffer<int32_t> JitAttention::key_ranges(const KernelArguments& args) const {
  int32_t kv_len = 0;
  Halide::Runtime::Buffer<int32_t> ranges = key_range_table(args, kv_len);
  KernelArgv argv;
  argv.push(&kv_len);
  for (size_t n = 0; n < args.modifier_tensor_count && n < kMaxModifierTensors; ++n) {
    argv.push(required_argument(args.modifier_tensors[n], "modifier_tensors"));
  }
  argv.push(ranges.raw_buffer());
  call_jit(*key_ranges_, argv, spec_.to_string() + " key ranges");
  return ranges;
}

Halide::Runtime::Buffer<int32_t> JitAttention::key_ranges_of_every_key(
    const KernelArguments& args) const {
  int32_t kv_len = 0;
  Halide::Runtime::Buffer<int32_t> ranges = key_range_table(args, kv_len);
  ranges.for_each_element(
      [&](const int* at) { ranges(at) = at[0] == key_range_begin ? 0 : kv_len; });
  return ranges;
}

void JitAttention::run(KernelArguments& args) const {
  // The kernel takes exactly its modifier's tensors: a count off by one
  // would shift every argument after them.
  const size_t declared = spec_.modified() ? modifier_of(spec_).tensors.size() : 0;
  if (args.modifier_tensor_count != declared) {
    throw SpecError("modifier_tensors",
                    fmt::format("{}: {} modifier tensors given; its modifier declares {}",
                                spec_.to_string(), args.modifier_tensor_count, declared));
  }
  if (args.modifier_key_ranges && !key_ranges_) {
    throw SpecError("modifier_key_ranges",
                    spec_.to_string() + " has no modifier with a mask rule; pass no key ranges");
  }
  // Computed for this call where the caller keeps none.
  Halide::Runtime::Buffer<int32_t> ranges;
  KernelArguments with_ranges = args;
  if (key_ranges_ && !args.modifier_key_ranges) {
    ranges = key_ranges(args);
    with_ranges.modifier_key_ranges = ranges.raw_buffer();
  }
  mark_host_inputs_dirty(with_ranges);
  KernelArgv argv = kernel_argv(spec_, with_ranges);
  {
    KernelStorageTypes as_taken(with_ranges, cuda_);
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
