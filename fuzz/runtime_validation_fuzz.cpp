// The runtime's argument validation on arbitrary tensor views: ranks, shapes,
// strides, element types, devices, null pointers, key lengths, bias and
// options drawn from the input. It returns a Status and never reads memory a
// well-formed view would not have (only key_lengths is read, and it is backed
// by a buffer as large as its own view claims).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "call_validation.h"

namespace {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T take() {
    T value{};
    const size_t n = std::min(sizeof(T), size_ - std::min(used_, size_));
    std::memcpy(&value, data_ + used_, n);
    used_ += sizeof(T);
    return value;
  }

 private:
  const uint8_t* data_;
  size_t size_, used_ = 0;
};

using attnforge::TensorView;

// Sizes mostly small with the odd huge or negative one.
int64_t extent(Bytes& in) {
  const uint8_t kind = in.take<uint8_t>();
  if (kind < 200) return kind % 9;
  if (kind < 250) return in.take<int64_t>();
  return int64_t(1) << (kind - 220);
}

TensorView view(Bytes& in, void* data) {
  TensorView t;
  t.rank = static_cast<int8_t>(in.take<uint8_t>() % 7) - 1;  // -1 .. 5
  t.type = static_cast<attnforge::ElementType>(in.take<uint8_t>() % 4);
  t.device = in.take<uint8_t>() % 8 == 0 ? attnforge::Device::cuda : attnforge::Device::cpu;
  t.data = in.take<uint8_t>() % 16 == 0 ? nullptr : data;
  for (int n = 0; n < TensorView::kMaxRank; ++n) {
    t.shape[n] = extent(in);
    t.strides[n] = extent(in);
  }
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  static float storage[64];
  TensorView q = view(in, storage), k = view(in, storage), v = view(in, storage),
             out = view(in, storage), bias = view(in, storage), slopes = view(in, storage),
             weights = view(in, storage);
  // Key lengths backed by real memory for exactly what the view spans.
  std::vector<int32_t> lengths(9 * 8, 0);
  for (int32_t& length : lengths) length = in.take<int8_t>();
  TensorView key_lengths = TensorView::contiguous(lengths.data(), attnforge::ElementType::i32,
                                                  {static_cast<int64_t>(in.take<uint8_t>() % 9)});
  key_lengths.strides[0] = in.take<uint8_t>() % 8;
  attnforge::AttentionOptions options;
  const uint8_t flags = in.take<uint8_t>();
  options.mask = static_cast<attnforge::MaskKind>(flags % 3);
  options.alignment = static_cast<attnforge::MaskAlignment>((flags >> 2) & 1);
  if (flags & 8) options.key_lengths = &key_lengths;
  if (flags & 16) options.bias = &bias;
  if (flags & 32) options.alibi_slopes = &slopes;
  if (flags & 64) options.weights = &weights;
  options.window_left = in.take<int16_t>();
  options.window_right = in.take<int16_t>();
  options.scale = in.take<float>();
  options.softcap = in.take<float>();
  attnforge::runtime::ValidatedCall call;
  attnforge::Status status = attnforge::runtime::validate_call(q, k, v, out, options, &call);
  if (!status.ok() && status.message.empty()) __builtin_trap();  // every error says why
  return 0;
}
