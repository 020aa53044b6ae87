// The 8-bit KV caches' number formats.
// - kv8: each row of K or V (one position of one KV head, head_dim values) is
//   int8 values and one f32 scale, value = int8 * scale. The scale is the
//   row's largest magnitude / 127 (symmetric, so 0 stays exact), and each
//   value rounds to the nearest int8, ties to even. A scale per row rather
//   than per block of 32 (llama.cpp's q8_0) keeps q.k one dot product over the
//   row, with its scale applied once per key.
// - kvfp8: each value is an fp8 e4m3 code (OCP's E4M3FN: 4 exponent bits,
//   bias 7, 3 mantissa bits, no infinities, largest 448) and each KV head
//   has one f32 scale, value = e4m3 * scale, as vLLM stores its fp8 cache.
//   The scale is set once (calibrated) rather than per row, so a writer
//   saturates values past 448 * scale. E4M3FN's NaN codes, 0x7F and 0xFF,
//   are never written, and read as +-480, the next step past 448: kernels
//   spend no instructions testing for them.
#pragma once

#include <cstdint>

#include "attention_spec.h"

namespace attnforge {

constexpr int kInt8Levels = 127;
constexpr float kE4m3Largest = 448.0f;

// Writes `count` values as int8 to `quantized` and returns their scale (0 for
// a row of zeros). Values must be finite.
float quantize_row(const float* values, int count, int8_t* quantized);

inline float dequantize(int8_t value, float scale) {
  return static_cast<float>(value) * scale;
}

// The e4m3 code nearest to `value` (finite), ties to an even mantissa;
// magnitudes past 448 saturate to +-448.
uint8_t e4m3_code(float value);
// The value of an e4m3 code as kernels read it (+-480 for the NaN codes).
float e4m3_value(uint8_t code);

// The scale that maps `count` values' largest magnitude to 448 (0 for zeros).
float e4m3_scale(const float* values, int64_t count);

// Bytes of one stored K or V element: 1 with an 8-bit cache, the dtype's otherwise.
int cache_element_bytes(const AttentionSpec& spec);

// Bytes of one stored K or V row of the spec's head dim: its scale included
// (kvfp8's per-head scale counts for nothing per row).
double cache_row_bytes(const AttentionSpec& spec);

}  // namespace attnforge
