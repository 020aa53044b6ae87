#include "packed_staging.h"

#include <cstddef>
#include <cstring>

#include "kernel_support/kernel_memory.h"

namespace attnforge::runtime {

bool is_dense(const TensorView& t) {
  int64_t stride = 1;
  for (int n = t.rank - 1; n >= 0; --n) {
    if (t.shape[n] > 1 && t.strides[n] != stride) return false;
    stride *= t.shape[n];
  }
  return true;
}

bool has_broadcast(const TensorView& t) {
  for (int n = 0; n < t.rank; ++n) {
    if (t.shape[n] > 1 && t.strides[n] == 0) return true;
  }
  return false;
}

TensorView dense_view(const TensorView& t, void* data) {
  TensorView dense = t;
  dense.data = data;
  int64_t stride = 1;
  for (int n = t.rank - 1; n >= 0; --n) {
    dense.strides[n] = stride;
    stride *= t.shape[n];
  }
  return dense;
}

void copy_elements(const TensorView& from, const TensorView& to) {
  const int64_t bytes = element_bytes(from.type);
  const int inner = from.rank - 1;
  const int64_t length = from.shape[inner];
  int64_t rows = 1;
  for (int n = 0; n < inner; ++n) rows *= from.shape[n];
  int64_t index[TensorView::kMaxRank] = {};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at_from = 0, at_to = 0;
    for (int n = 0; n < inner; ++n) {
      at_from += index[n] * from.strides[n];
      at_to += index[n] * to.strides[n];
    }
    const auto* source = static_cast<const std::byte*>(from.data) + at_from * bytes;
    auto* target = static_cast<std::byte*>(to.data) + at_to * bytes;
    std::memcpy(target, source, static_cast<size_t>(length * bytes));
    for (int n = inner - 1; n >= 0 && ++index[n] == from.shape[n]; --n) index[n] = 0;
  }
}

StagedKeysAndValues::StagedKeysAndValues(const TensorView& q, const TensorView& k_in,
                                         const TensorView& v_in)
    : k(k_in), v(v_in) {
  // [B, H, L, D] views: each key is read once per query of each query head.
  const int64_t reads_per_key = q.shape[1] * q.shape[2] / k.shape[1];
  if (k.device != Device::cpu || reads_per_key < kStagedMinReadsPerKey ||
      (is_dense(k) && is_dense(v)) || has_broadcast(k) || has_broadcast(v)) {
    return;
  }
  const size_t k_bytes = static_cast<size_t>(k.shape[0] * k.shape[1] * k.shape[2] * k.shape[3] *
                                             element_bytes(k.type));
  memory_ = kernel_memory_allocate(2 * k_bytes);
  if (!memory_) return;  // out of memory: the kernel reads the rows where they are
  k = dense_view(k_in, memory_);
  v = dense_view(v_in, static_cast<std::byte*>(memory_) + k_bytes);
  copy_elements(k_in, k);
  copy_elements(v_in, v);
}

StagedKeysAndValues::~StagedKeysAndValues() {
  kernel_memory_free(memory_);
}

}  // namespace attnforge::runtime
