#include "half_precision.h"

#include <cmath>
#include <cstring>

namespace attnforge {

namespace {

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

uint16_t float_to_f16_bits(float value) {
  uint32_t bits = bits_of(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  float magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7e00u;
  if (magnitude >= 65520.0f) return sign | 0x7c00u;  // rounds to infinity
  if (magnitude < 6.103515625e-05f) {                // subnormal: units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  uint32_t abs_bits = bits & 0x7fffffffu;
  uint32_t mantissa = abs_bits & 0x7fffffu;
  int exponent = static_cast<int>(abs_bits >> 23) - 127 + 15;
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // carries into the exponent
  return sign | static_cast<uint16_t>(half);
}

float f16_bits_to_float(uint16_t bits) {
  float sign = (bits & 0x8000u) ? -1.0f : 1.0f;
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
}

uint16_t float_to_bf16_bits(float value) {
  uint32_t bits = bits_of(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16_bits_to_float(uint16_t bits) {
  return float_of(static_cast<uint32_t>(bits) << 16);
}

}  // namespace attnforge
