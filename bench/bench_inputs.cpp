#include "bench_inputs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "spec/dtype_traits.h"

namespace attnforge::bench {

namespace {

// A copy of `values` in `dtype` (the same buffer for f32).
Halide::Runtime::Buffer<> in_storage(BenchInputs::Tensor& values, DType dtype) {
  if (dtype == DType::f32) return values;
  Halide::Runtime::Buffer<uint16_t> stored(values.dim(0).extent(), values.dim(1).extent(),
                                           values.dim(2).extent(), values.dim(3).extent());
  const DTypeTraits& traits = traits_of(dtype);
  std::transform(values.begin(), values.end(), stored.begin(), [&traits](float x) {
    uint16_t bits;
    traits.store(&bits, x);
    return bits;
  });
  Halide::Runtime::Buffer<> typed = stored;
  typed.raw_buffer()->type = halide_type_of(dtype);
  return typed;
}

}  // namespace

BenchInputs::BenchInputs(const AttentionSpec& spec, const Shape& shape, uint32_t seed)
    : dtype(spec.dtype),
      q(shape.head_dim, shape.q_len, spec.heads, shape.batch),
      k(shape.head_dim, shape.kv_len, spec.kv_heads, shape.batch),
      v(shape.head_dim, shape.kv_len, spec.kv_heads, shape.batch),
      out(shape.head_dim, shape.q_len, spec.heads, shape.batch),
      expected(shape.head_dim, shape.q_len, spec.heads, shape.batch) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Tensor* t : {&q, &k, &v}) {
    std::generate(t->begin(), t->end(),
                  [&] { return static_cast<float>(round_to_dtype(uniform(rng), dtype)); });
  }
  kernel_q = in_storage(q, dtype);
  kernel_k = in_storage(k, dtype);
  kernel_v = in_storage(v, dtype);
  if (spec.quantized_kv()) {
    quantized = quantize_kv(*k.raw_buffer(), *v.raw_buffer(), spec.kv_storage);
    dequantize_into(quantized.k, quantized.k_scale, *k.raw_buffer());
    dequantize_into(quantized.v, quantized.v_scale, *v.raw_buffer());
    kernel_k = quantized.k;
    kernel_v = quantized.v;
    args.k_scale = quantized.k_scale.raw_buffer();
    args.v_scale = quantized.v_scale.raw_buffer();
  }
  kernel_out = in_storage(out, dtype);
  args.q = kernel_q.raw_buffer();
  args.k = kernel_k.raw_buffer();
  args.v = kernel_v.raw_buffer();
  args.out = kernel_out.raw_buffer();
  args.scale = default_scale(spec.head_dim);
  if (spec.key_padding) {
    key_lengths = Halide::Runtime::Buffer<int32_t>(shape.batch);
    key_lengths.fill(shape.kv_len);
    args.key_lengths = key_lengths.raw_buffer();
  }
  if (spec.bias == BiasKind::alibi) {  // 2^-1, 2^-2, ... as examples/mods/alibi.cpp samples them
    alibi_slopes = Halide::Runtime::Buffer<float>(spec.heads);
    alibi_slopes.for_each_element([&](int h) { alibi_slopes(h) = std::exp2(-1.0f - h); });
    args.alibi_slopes = alibi_slopes.raw_buffer();
  }
  if (spec.paged()) {
    paged = page_cache(*kernel_k.raw_buffer(), *kernel_v.raw_buffer(), spec.page_size, seed);
    args.k = paged.k.raw_buffer();
    args.v = paged.v.raw_buffer();
    args.page_table = paged.table.raw_buffer();
    if (spec.quantized_kv()) {
      k_scale_pages = page_scales(quantized.k_scale, paged.table, spec.page_size);
      v_scale_pages = page_scales(quantized.v_scale, paged.table, spec.page_size);
      args.k_scale = k_scale_pages.raw_buffer();
      args.v_scale = v_scale_pages.raw_buffer();
    }
  }
}

void BenchInputs::poison_output() {
  std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
  if (dtype == DType::f32) return;
  const auto nan = static_cast<uint16_t>(traits_of(dtype).quiet_nan_bits);
  auto* bits = static_cast<uint16_t*>(kernel_out.data());
  std::fill(bits, bits + kernel_out.number_of_elements(), nan);
}

void BenchInputs::read_output() {
  if (dtype == DType::f32) return;
  const auto* bits = static_cast<const uint16_t*>(kernel_out.data());
  const DTypeTraits& traits = traits_of(dtype);
  std::transform(bits, bits + kernel_out.number_of_elements(), out.begin(),
                 [&traits](uint16_t b) { return traits.load(&b); });
}

}  // namespace attnforge::bench
