// Round-to-nearest-even conversions between float and the 16-bit storage types.
#pragma once

#include <cstdint>

namespace attnforge {

uint16_t float_to_f16_bits(float value);
float f16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(uint16_t bits);

}  // namespace attnforge
