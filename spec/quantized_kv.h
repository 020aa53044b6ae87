// K and V as an 8-bit cache's kernels take them (kv8), from K and V in any
// storage dtype: for the benchmarks and the tuner, which run 8-bit kernels on
// the values their peers see dequantized.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

namespace attnforge {

struct QuantizedKv {
  Halide::Runtime::Buffer<int8_t> k, v;             // (d, position, kv head, batch)
  Halide::Runtime::Buffer<float> k_scale, v_scale;  // (position, kv head, batch)
};

// k and v (d, position, kv head, batch) in f32, f16 or bf16, quantized row by
// row (kv_quantization.h).
QuantizedKv quantize_kv(const halide_buffer_t& k, const halide_buffer_t& v);

// Writes the value each element of `quantized` stands for into `values`
// (the same shape, f32, f16 or bf16), so that peers read what kernels read.
void dequantize_into(const Halide::Runtime::Buffer<int8_t>& quantized,
                     const Halide::Runtime::Buffer<float>& scales, halide_buffer_t& values);

// Scales (position, kv head, batch) placed as paged_cache.h places their rows:
// (position in page, kv head, page) under `table` (max_pages, B).
Halide::Runtime::Buffer<float> page_scales(const Halide::Runtime::Buffer<float>& scales,
                                           const Halide::Runtime::Buffer<int32_t>& table,
                                           int page_size);

}  // namespace attnforge
