#include "dtype_traits.h"

#include <cstring>

#include "half_precision.h"

namespace attnforge {

namespace {

float load_f32(const void* at) {
  float value;
  std::memcpy(&value, at, sizeof value);
  return value;
}
void store_f32(void* at, float value) {
  std::memcpy(at, &value, sizeof value);
}

// A 16-bit type through its bit converters (half_precision.h).
template <float (*to_float)(uint16_t)>
float load_half(const void* at) {
  uint16_t bits;
  std::memcpy(&bits, at, sizeof bits);
  return to_float(bits);
}

template <uint16_t (*to_bits)(float)>
void store_half(void* at, float value) {
  const uint16_t bits = to_bits(value);
  std::memcpy(at, &bits, sizeof bits);
}

}  // namespace

const std::array<DTypeTraits, 3>& dtype_table() {
  static const std::array<DTypeTraits, 3> table = {{
      {DType::f32, "f32", halide_type_t(halide_type_float, 32), 4, 0x7fc00000u, 1e-4, load_f32,
       store_f32},
      {DType::f16, "f16", halide_type_t(halide_type_float, 16), 2, 0x7e00u, 2e-3,
       load_half<f16_bits_to_float>, store_half<float_to_f16_bits>},
      {DType::bf16, "bf16", halide_type_t(halide_type_bfloat, 16), 2, 0x7fc0u, 1.6e-2,
       load_half<bf16_bits_to_float>, store_half<float_to_bf16_bits>},
  }};
  return table;
}

const DTypeTraits& traits_of(DType dtype) {
  for (const DTypeTraits& traits : dtype_table()) {
    if (traits.dtype == dtype) return traits;
  }
  return dtype_table()[0];  // unreachable: every DType has a row (tested)
}

double round_to_dtype(double value, DType dtype) {
  const DTypeTraits& traits = traits_of(dtype);
  alignas(4) unsigned char stored[4];
  traits.store(stored, static_cast<float>(value));
  return traits.load(stored);
}

}  // namespace attnforge
