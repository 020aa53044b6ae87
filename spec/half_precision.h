// Round-to-nearest-even conversions between float and the 16-bit storage types.
#pragma once

#include <cstdint>

#include "spec/attention_spec.h"

namespace attnforge {

uint16_t float_to_f16_bits(float value);
float f16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(uint16_t bits);

// The value `value` becomes when stored as `dtype`.
double round_to_dtype(double value, DType dtype);

}  // namespace attnforge
