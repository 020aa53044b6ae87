// Everything attnforge knows about a storage type, one row per DType: its
// spec token, the kernels' Halide element type, its size, how a value is
// stored and read, and the tuner checker's tolerance. Every place that maps
// a DType to one of these reads this table.
#pragma once

#include <HalideRuntime.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "spec/attention_spec.h"

namespace attnforge {

struct DTypeTraits {
  DType dtype;
  std::string_view name;      // the spec token (f32, f16, bf16)
  halide_type_t halide_type;  // element type of the kernels' Q, K, V and output
  int bytes;
  // A quiet NaN's bit pattern (to poison outputs before a run).
  uint32_t quiet_nan_bits;
  // The checker's bound on |kernel - reference| / (1 + |reference|): f32
  // accumulation differences for f32, a few ulps of the storage type else.
  double check_tolerance;
  float (*load)(const void* at);         // one element, as f32
  void (*store)(void* at, float value);  // rounded to nearest even
};

const std::array<DTypeTraits, 3>& dtype_table();
const DTypeTraits& traits_of(DType dtype);

// The value `value` becomes when stored as `dtype`.
double round_to_dtype(double value, DType dtype);

}  // namespace attnforge
