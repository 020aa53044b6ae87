#include "modifier_samples.h"

#include <cstdint>

#include "algorithm/modifier_registry.h"

namespace attnforge::autotune {

namespace {

template <typename T>
void store(void* data, size_t n, double value) {
  static_cast<T*>(data)[n] = static_cast<T>(value);
}

// Element n of `buffer` (dense) set to `value` in its type.
void store_as(Halide::Runtime::Buffer<void>& buffer, size_t n, double value) {
  const halide_type_t type = buffer.type();
  void* data = buffer.data();
  if (type.code == halide_type_float) return store<float>(data, n, value);
  const bool is_signed = type.code == halide_type_int;
  switch (type.bits) {
    case 8:
      return is_signed ? store<int8_t>(data, n, value) : store<uint8_t>(data, n, value);
    case 16:
      return is_signed ? store<int16_t>(data, n, value) : store<uint16_t>(data, n, value);
    default:
      return is_signed ? store<int32_t>(data, n, value) : store<uint32_t>(data, n, value);
  }
}

}  // namespace

ModifierSamples::ModifierSamples(const AttentionSpec& spec, int batch, int q_len, int kv_len) {
  if (!spec.modified()) return;
  for (const ModifierTensor& tensor : modifier_of(spec).tensors) {
    const std::vector<int> extents = modifier_extents(tensor, spec, batch, q_len, kv_len);
    const Halide::Type type = tensor.type;
    Halide::Runtime::Buffer<void> buffer(halide_type_t(type), extents);
    // Dense, innermost first: element n's index by dividing out the extents.
    std::vector<int> index(extents.size());
    for (size_t n = 0; n < static_cast<size_t>(buffer.number_of_elements()); ++n) {
      size_t rest = n;
      for (size_t d = 0; d < extents.size(); ++d) {
        index[d] = static_cast<int>(rest % extents[d]);
        rest /= extents[d];
      }
      store_as(buffer, n, tensor.sample ? tensor.sample(index) : 0.0);
    }
    tensors_.push_back(std::move(buffer));
  }
}

void ModifierSamples::attach(KernelArguments& args) {
  for (size_t n = 0; n < tensors_.size(); ++n) args.modifier_tensors[n] = tensors_[n].raw_buffer();
  args.modifier_tensor_count = tensors_.size();
}

}  // namespace attnforge::autotune
