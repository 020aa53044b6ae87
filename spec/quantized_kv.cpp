#include "quantized_kv.h"

#include <algorithm>
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

struct Extents {
  int D, L, H, B;
};
Extents extents_of(const halide_buffer_t& buffer) {
  return {buffer.dim[0].extent, buffer.dim[1].extent, buffer.dim[2].extent, buffer.dim[3].extent};
}

// Calls row(values, j, h, b) with each row of `buffer` as f32.
template <typename Row>
void for_each_row(const halide_buffer_t& buffer, Row&& row) {
  const auto [D, L, H, B] = extents_of(buffer);
  const DTypeTraits& traits = traits_of_buffer(buffer);
  std::vector<float> values(D);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < L; ++j) {
        for (int d = 0; d < D; ++d) values[d] = traits.load(element(buffer, d, j, h, b));
        row(values.data(), j, h, b);
      }
}

void quantize_rows(const halide_buffer_t& values, Halide::Runtime::Buffer<>& quantized,
                   Halide::Runtime::Buffer<float>& scales) {
  const Extents e = extents_of(values);
  const int D = e.D;
  Halide::Runtime::Buffer<int8_t> levels(D, e.L, e.H, e.B);
  scales = Halide::Runtime::Buffer<float>(e.L, e.H, e.B);
  for_each_row(values, [&](const float* row, int j, int h, int b) {
    scales(j, h, b) = quantize_row(row, D, &levels(0, j, h, b));
  });
  quantized = levels;
}

void quantize_e4m3(const halide_buffer_t& values, Halide::Runtime::Buffer<>& quantized,
                   Halide::Runtime::Buffer<float>& scales) {
  const Extents e = extents_of(values);
  const int D = e.D, H = e.H;
  std::vector<float> largest(H, 0.0f);
  for_each_row(values, [&](const float* row, int, int h, int) {
    largest[h] = std::max(largest[h], e4m3_scale(row, D) * kE4m3Largest);
  });
  scales = Halide::Runtime::Buffer<float>(H);
  for (int h = 0; h < H; ++h) scales(h) = largest[h] / kE4m3Largest;
  Halide::Runtime::Buffer<uint8_t> codes(D, e.L, H, e.B);
  for_each_row(values, [&](const float* row, int j, int h, int b) {
    for (int d = 0; d < D; ++d) {
      codes(d, j, h, b) = scales(h) > 0 ? e4m3_code(row[d] / scales(h)) : 0;
    }
  });
  quantized = codes;
}

}  // namespace

QuantizedKv quantize_kv(const halide_buffer_t& k, const halide_buffer_t& v, KvStorage storage) {
  QuantizedKv cache;
  auto quantize = storage == KvStorage::fp8_e4m3 ? quantize_e4m3 : quantize_rows;
  quantize(k, cache.k, cache.k_scale);
  quantize(v, cache.v, cache.v_scale);
  return cache;
}

void dequantize_into(const Halide::Runtime::Buffer<>& levels,
                     const Halide::Runtime::Buffer<float>& scales, halide_buffer_t& values) {
  const bool e4m3 = levels.type() == halide_type_t(halide_type_uint, 8);
  const DTypeTraits& traits = traits_of_buffer(values);
  const auto [D, L, H, B] = extents_of(*levels.raw_buffer());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < L; ++j)
        for (int d = 0; d < D; ++d) {
          const uint8_t* level = element(*levels.raw_buffer(), d, j, h, b);
          const float value = e4m3 ? e4m3_value(*level) * scales(h)
                                   : dequantize(static_cast<int8_t>(*level), scales(j, h, b));
          traits.store(element(values, d, j, h, b), value);
        }
}

Halide::Runtime::Buffer<float> page_scales(const Halide::Runtime::Buffer<float>& scales,
                                           const Halide::Runtime::Buffer<int32_t>& table,
                                           int page_size) {
  if (scales.dimensions() == 1) return scales;
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
