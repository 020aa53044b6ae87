#include "quantized_kv.h"

#include <vector>

#include "dtype_traits.h"
#include "kv_quantization.h"

namespace attnforge {

namespace {

const DTypeTraits& traits_of_buffer(const halide_buffer_t& buffer) {
  for (const DTypeTraits& traits : dtype_table()) {
    if (traits.halide_type == buffer.type) return traits;
  }
  return traits_of(DType::f32);
}

uint8_t* element(const halide_buffer_t& buffer, int d, int position, int h, int b) {
  const int64_t offset = int64_t(d) * buffer.dim[0].stride +
                         int64_t(position) * buffer.dim[1].stride +
                         int64_t(h) * buffer.dim[2].stride + int64_t(b) * buffer.dim[3].stride;
  return buffer.host + offset * buffer.type.bytes();
}

void quantize_rows(const halide_buffer_t& values, Halide::Runtime::Buffer<int8_t>& quantized,
                   Halide::Runtime::Buffer<float>& scales) {
  const int D = values.dim[0].extent, L = values.dim[1].extent;
  const int H = values.dim[2].extent, B = values.dim[3].extent;
  quantized = Halide::Runtime::Buffer<int8_t>(D, L, H, B);
  scales = Halide::Runtime::Buffer<float>(L, H, B);
  const DTypeTraits& traits = traits_of_buffer(values);
  std::vector<float> row(D);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < L; ++j) {
        for (int d = 0; d < D; ++d) row[d] = traits.load(element(values, d, j, h, b));
        scales(j, h, b) = quantize_row(row.data(), D, &quantized(0, j, h, b));
      }
}

}  // namespace

QuantizedKv quantize_kv(const halide_buffer_t& k, const halide_buffer_t& v) {
  QuantizedKv cache;
  quantize_rows(k, cache.k, cache.k_scale);
  quantize_rows(v, cache.v, cache.v_scale);
  return cache;
}

void dequantize_into(const Halide::Runtime::Buffer<int8_t>& quantized,
                     const Halide::Runtime::Buffer<float>& scales, halide_buffer_t& values) {
  const DTypeTraits& traits = traits_of_buffer(values);
  for (int b = 0; b < quantized.dim(3).extent(); ++b)
    for (int h = 0; h < quantized.dim(2).extent(); ++h)
      for (int j = 0; j < quantized.dim(1).extent(); ++j)
        for (int d = 0; d < quantized.dim(0).extent(); ++d) {
          traits.store(element(values, d, j, h, b),
                       dequantize(quantized(d, j, h, b), scales(j, h, b)));
        }
}

Halide::Runtime::Buffer<float> page_scales(const Halide::Runtime::Buffer<float>& scales,
                                           const Halide::Runtime::Buffer<int32_t>& table,
                                           int page_size) {
  const int L = scales.dim(0).extent(), H = scales.dim(1).extent(), B = scales.dim(2).extent();
  Halide::Runtime::Buffer<float> paged(page_size, H, table.number_of_elements());
  paged.fill(0.0f);
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < L; ++j)
      for (int h = 0; h < H; ++h)
        paged(j % page_size, h, table(j / page_size, b)) = scales(j, h, b);
  return paged;
}

}  // namespace attnforge
