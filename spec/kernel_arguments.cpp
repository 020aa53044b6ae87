#include "kernel_arguments.h"

#include <string>

#include "spec/dtype_traits.h"

namespace attnforge {

void* required_argument(halide_buffer_t* buffer, const char* name) {
  if (buffer == nullptr) throw SpecError(name, std::string(name) + " is required by this spec");
  return buffer;
}

halide_type_t halide_type_of(DType dtype) {
  return traits_of(dtype).halide_type;
}

halide_type_t kernel_halide_type(DType dtype, bool cuda) {
  if (dtype == DType::bf16 && cuda) return halide_type_t(halide_type_uint, 16);
  return halide_type_of(dtype);
}

halide_type_t argument_halide_type(const AttentionSpec& spec, ArgumentElement element, bool cuda) {
  switch (element) {
    case ArgumentElement::storage:
      return kernel_halide_type(spec.dtype, cuda);
    case ArgumentElement::cache:
      if (spec.kv_storage == KvStorage::int8) return halide_type_t(halide_type_int, 8);
      if (spec.kv_storage == KvStorage::fp8_e4m3) return halide_type_t(halide_type_uint, 8);
      return kernel_halide_type(spec.dtype, cuda);
    case ArgumentElement::int32:
      return halide_type_t(halide_type_int, 32);
    case ArgumentElement::float32:
      return halide_type_t(halide_type_float, 32);
  }
  return halide_type_of(spec.dtype);
}

KernelStorageTypes::KernelStorageTypes(KernelArguments& args, bool cuda)
    : KernelStorageTypes({args.q, args.k, args.v, args.bias, args.out, args.weights}, cuda) {}

KernelStorageTypes::KernelStorageTypes(std::initializer_list<halide_buffer_t*> buffers,
                                       bool as_bits) {
  if (!as_bits) return;
  for (halide_buffer_t* buffer : buffers) {
    if (buffer && buffer->type == halide_type_of(DType::bf16)) {
      saved_.emplace_back(buffer, buffer->type);
      buffer->type = kernel_halide_type(DType::bf16, true);
    }
  }
}

KernelStorageTypes::~KernelStorageTypes() {
  for (auto [buffer, type] : saved_) buffer->type = type;
}

void mark_host_inputs_dirty(KernelArguments& args) {
  for (halide_buffer_t* input : {args.q, args.k, args.v, args.k_scale, args.v_scale,
                                 args.key_lengths, args.page_table, args.bias, args.alibi_slopes}) {
    if (input && input->device == 0) input->flags |= halide_buffer_flag_host_dirty;
  }
  for (size_t n = 0; n < args.modifier_tensor_count && n < kMaxModifierTensors; ++n) {
    halide_buffer_t* input = args.modifier_tensors[n];
    if (input && input->device == 0) input->flags |= halide_buffer_flag_host_dirty;
  }
  halide_buffer_t* ranges = args.modifier_key_ranges;
  if (ranges && ranges->device == 0) ranges->flags |= halide_buffer_flag_host_dirty;
}

int argument_dimensions(const AttentionSpec& spec, const KernelArgumentSlot& slot) {
  const bool scales =
      slot.argument == KernelArgument::k_scale || slot.argument == KernelArgument::v_scale;
  return scales && spec.kv_storage == KvStorage::fp8_e4m3 ? 1 : slot.dimensions;
}

void* scalar_address(KernelArguments& args, KernelArgument argument) {
  if (argument == KernelArgument::window_left) return &args.window_left;
  if (argument == KernelArgument::window_right) return &args.window_right;
  return &args.scale;
}

const std::array<KernelArgumentSlot, 15>& kernel_argument_table() {
  using A = KernelArgument;
  using E = ArgumentElement;
  using Args = KernelArguments;
  static const std::array<KernelArgumentSlot, 15> table = {{
      {A::q, "q", E::storage, 4, false, [](const AttentionSpec&) { return true; }, &Args::q},
      {A::k, "k", E::cache, 4, false, [](const AttentionSpec&) { return true; }, &Args::k},
      {A::v, "v", E::cache, 4, false, [](const AttentionSpec&) { return true; }, &Args::v},
      {A::k_scale, "k_scale", E::float32, 3, false,
       [](const AttentionSpec& s) { return s.quantized_kv(); }, &Args::k_scale},
      {A::v_scale, "v_scale", E::float32, 3, false,
       [](const AttentionSpec& s) { return s.quantized_kv(); }, &Args::v_scale},
      {A::key_lengths, "key_lengths", E::int32, 1, false,
       [](const AttentionSpec& s) { return s.key_padding; }, &Args::key_lengths},
      {A::page_table, "page_table", E::int32, 2, false,
       [](const AttentionSpec& s) { return s.paged(); }, &Args::page_table},
      {A::bias, "bias", E::storage, 4, false,
       [](const AttentionSpec& s) { return s.bias == BiasKind::tensor; }, &Args::bias},
      {A::alibi_slopes, "alibi_slopes", E::float32, 1, false,
       [](const AttentionSpec& s) { return s.bias == BiasKind::alibi; }, &Args::alibi_slopes},
      {A::scale, "scale", E::float32, 0, false, [](const AttentionSpec&) { return true; }, nullptr},
      {A::window_left, "window_left", E::int32, 0, false,
       [](const AttentionSpec& s) { return s.run_time_window; }, nullptr},
      {A::window_right, "window_right", E::int32, 0, false,
       [](const AttentionSpec& s) { return s.run_time_window; }, nullptr},
      {A::out, "out", E::storage, 4, true, [](const AttentionSpec&) { return true; }, &Args::out},
      {A::weights, "weights", E::storage, 4, true,
       [](const AttentionSpec& s) { return s.return_weights; }, &Args::weights},
      {A::lse, "lse", E::float32, 3, true, [](const AttentionSpec& s) { return s.return_lse; },
       &Args::lse},
  }};
  return table;
}

KernelArgv kernel_argv(const AttentionSpec& spec, KernelArguments& args) {
  if (args.modifier_tensor_count > (spec.modified() ? kMaxModifierTensors : 0)) {
    throw SpecError("modifier_tensors",
                    std::to_string(args.modifier_tensor_count) + " modifier tensors for " +
                        (spec.modified() ? "a modifier, which reads at most " +
                                               std::to_string(kMaxModifierTensors)
                                         : std::string("a spec without a modifier")));
  }
  KernelArgv argv;
  for_each_kernel_argument(spec, [&](const KernelArgumentSlot& slot) {
    if (slot.argument == KernelArgument::out) {
      for (size_t n = 0; n < args.modifier_tensor_count; ++n) {
        argv.push(required_argument(args.modifier_tensors[n], "modifier_tensors"));
      }
      if (args.modifier_key_ranges) argv.push(args.modifier_key_ranges);
    }
    argv.push(slot.buffer ? required_argument(args.*slot.buffer, slot.name)
                          : scalar_address(args, slot.argument));
  });
  return argv;
}

}  // namespace attnforge
