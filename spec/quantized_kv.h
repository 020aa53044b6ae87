// K and V as an 8-bit cache's kernels take them (kv8, kvfp8), from K and V in
// any storage dtype: for the benchmarks and the tuner, which run 8-bit
// kernels on the values their peers see dequantized.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

#include "attention_spec.h"

namespace attnforge {

struct QuantizedKv {
  // (d, position, kv head, batch): int8 levels (kv8) or uint8 e4m3 codes (kvfp8).
  Halide::Runtime::Buffer<> k, v;
  // kv8: (position, kv head, batch); kvfp8: (kv head).
  Halide::Runtime::Buffer<float> k_scale, v_scale;
};

// k and v (d, position, kv head, batch) in f32, f16 or bf16, quantized
// (kv_quantization.h): kv8 row by row, kvfp8 with each KV head's scale
// mapping its largest magnitude to 448.
QuantizedKv quantize_kv(const halide_buffer_t& k, const halide_buffer_t& v, KvStorage storage);

// Writes the value each element of `levels` (a QuantizedKv's k or v) stands
// for into `values` (the same shape, f32, f16 or bf16), so that peers read
// what kernels read.
void dequantize_into(const Halide::Runtime::Buffer<>& levels,
                     const Halide::Runtime::Buffer<float>& scales, halide_buffer_t& values);

// kv8's scales (position, kv head, batch) placed as paged_cache.h places their
// rows: (position in page, kv head, page) under `table` (max_pages, B).
// kvfp8's scales per KV head belong to no page: they are returned as they are.
Halide::Runtime::Buffer<float> page_scales(const Halide::Runtime::Buffer<float>& scales,
                                           const Halide::Runtime::Buffer<int32_t>& table,
                                           int page_size);

}  // namespace attnforge
