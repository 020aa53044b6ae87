// An 8-bit KV cache as the algorithm reads it (spec/kv_quantization.h): each
// stored element of K or V is a level, and the value a form reads is
// level * scale, in f32.
// - kv8: int8 levels, an f32 scale per (position, KV head).
// - kvfp8: e4m3 codes, read as f32 levels of value / 256 (see
//   e4m3_levels), and an f32 scale per KV head, read per row as scale * 256.
#pragma once

#include <Halide.h>

#include <string>

#include "spec/kv_quantization.h"

namespace attnforge {

// values(d, position, kv head, x) as levels and scales(position, kv head, x)
// f32 as the f32 rows (d, position, kv head, x); x is the batch, or the page
// of a paged cache.
Halide::Func dequantized_rows(const Halide::Func& values, const Halide::Func& scales,
                              const std::string& name);

// How much smaller e4m3_levels are than the codes' values.
constexpr float kE4m3LevelUnit = 256.0f;

// uint8 e4m3 codes (d, position, kv head, x) as f32 levels, value / 256: the
// code's bits placed in an f16's (e4m3's exponent bias is 8 below f16's), so
// that one f16-to-f32 conversion reads normal and subnormal codes alike.
// The NaN codes read as +-480 (e4m3_value): testing for them took a third
// of an AVX2 decoder's time, and no writer stores them.
Halide::Func e4m3_levels(const Halide::Func& codes, const std::string& name);

// A scale per KV head, scales(h), as kvfp8's scale per row for e4m3_levels:
// (position, kv head, x) -> scales(kv head) * 256.
Halide::Func e4m3_row_scales(const Halide::Func& scales, const std::string& name);

}  // namespace attnforge
