#include "kv_quantization.h"

#include <algorithm>
#include <cmath>

#include "dtype_traits.h"

namespace attnforge {

float quantize_row(const float* values, int count, int8_t* quantized) {
  float largest = 0.0f;
  for (int n = 0; n < count; ++n) largest = std::max(largest, std::fabs(values[n]));
  const float scale = largest / kInt8Levels;
  for (int n = 0; n < count; ++n) {
    const float level = scale > 0.0f ? std::nearbyint(values[n] / scale) : 0.0f;
    quantized[n] = static_cast<int8_t>(std::clamp(level, -127.0f, 127.0f));
  }
  return scale;
}

uint8_t e4m3_code(float value) {
  constexpr int kBias = 7, kMantissa = 8;  // 2^3 steps per binade
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::fabs(value);
  if (!(magnitude < kE4m3Largest)) return sign | 0x7E;
  if (magnitude == 0.0f) return sign;
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude in [2^(exponent-1), 2^exponent)
  // The binade's step: subnormals (below 2^-6) share 2^-9.
  const int binade = std::max(exponent - 1, 1 - kBias);
  const float steps = std::nearbyint(std::ldexp(magnitude, 3 - binade));  // ties to even
  // steps in [8, 16] for a normal binade, [0, 8] for the subnormal one; 16
  // (or 8 from below 2^-6) carries into the next binade's first code.
  const int code = (binade + kBias - 1) * kMantissa + static_cast<int>(steps);
  return sign | static_cast<uint8_t>(std::min(code, 0x7E));
}

float e4m3_value(uint8_t code) {
  const int magnitude = code & 0x7F, exponent = magnitude >> 3, mantissa = magnitude & 7;
  const float value = exponent == 0 ? std::ldexp(float(mantissa), -9)
                                    : std::ldexp(float(8 + mantissa), exponent - 10);
  return (code & 0x80) ? -value : value;
}

float e4m3_scale(const float* values, int64_t count) {
  float largest = 0.0f;
  for (int64_t n = 0; n < count; ++n) largest = std::max(largest, std::fabs(values[n]));
  return largest / kE4m3Largest;
}

int cache_element_bytes(const AttentionSpec& spec) {
  return spec.quantized_kv() ? 1 : traits_of(spec.dtype).bytes;
}

double cache_row_bytes(const AttentionSpec& spec) {
  const double scale_bytes = spec.kv_storage == KvStorage::int8 ? 4 : 0;
  return double(spec.head_dim) * cache_element_bytes(spec) + scale_bytes;
}

}  // namespace attnforge
