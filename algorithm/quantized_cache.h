// An 8-bit KV cache as the algorithm reads it: each stored row of K or V is
// int8 values and one f32 scale per (position, KV head), and the value a form
// reads is value * scale, in f32 (spec/kv_quantization.h writes such rows).
#pragma once

#include <Halide.h>

#include <string>

#include "spec/kv_quantization.h"

namespace attnforge {

// values(d, position, kv head, x) int8 and scales(position, kv head, x) f32 as
// the f32 rows (d, position, kv head, x); x is the batch, or the page of a paged cache.
Halide::Func dequantized_rows(const Halide::Func& values, const Halide::Func& scales,
                              const std::string& name);

}  // namespace attnforge
