// The 8-bit KV cache's number format (kv8): each row of K or V (one position
// of one KV head, head_dim values) is int8 values and one f32 scale, value =
// int8 * scale. The scale is the row's largest magnitude / 127 (symmetric, so
// 0 stays exact), and each value rounds to the nearest int8, ties to even.
// A scale per row rather than per block of 32 (llama.cpp's q8_0) keeps q.k one
// dot product over the row, with its scale applied once per key.
#pragma once

#include <cstdint>

#include "attention_spec.h"

namespace attnforge {

constexpr int kInt8Levels = 127;

// Writes `count` values as int8 to `quantized` and returns their scale (0 for
// a row of zeros). Values must be finite.
float quantize_row(const float* values, int count, int8_t* quantized);

inline float dequantize(int8_t value, float scale) {
  return static_cast<float>(value) * scale;
}

// Bytes of one stored K or V element: int8's with kv8, the dtype's otherwise.
int cache_element_bytes(const AttentionSpec& spec);

// Bytes of one stored K or V row of the spec's head dim: its scale included.
double cache_row_bytes(const AttentionSpec& spec);

}  // namespace attnforge
