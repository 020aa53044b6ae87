#include "tuning_inputs.h"

#include <Halide.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "spec/dtype_traits.h"

namespace attnforge::autotune {

namespace {

void store(void* at, DType dtype, float value) {
  traits_of(dtype).store(at, value);
}

float load(const void* at, DType dtype) {
  return traits_of(dtype).load(at);
}

}  // namespace

TuningInputs::Tensor TuningInputs::make(int x0, int x1, int x2, int x3) {
  return Tensor(halide_type_of(spec_.dtype), x0, x1, x2, x3);
}

void TuningInputs::fill(Tensor& tensor, float low, float high, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  uint8_t* data = static_cast<uint8_t*>(tensor.data());
  const size_t bytes = tensor.type().bytes();
  for (size_t n = 0; n < tensor.number_of_elements(); ++n)
    store(data + n * bytes, spec_.dtype, dist(rng));
}

TuningInputs::TuningInputs(const AttentionSpec& spec, TuningShape shape, uint32_t seed)
    : spec_(spec) {
  const int D = spec.head_dim, H = spec.heads, Hkv = spec.kv_heads, B = shape.batch;
  q_ = make(D, shape.q_len, H, B);
  k_ = make(D, shape.kv_len, Hkv, B);
  v_ = make(D, shape.kv_len, Hkv, B);
  out_ = make(D, shape.q_len, H, B);
  fill(q_, -1, 1, seed);
  fill(k_, -1, 1, seed + 1);
  fill(v_, -1, 1, seed + 2);
  args_.q = q_.raw_buffer();
  args_.k = k_.raw_buffer();
  args_.v = v_.raw_buffer();
  args_.out = out_.raw_buffer();
  args_.scale = default_scale(D);
  modifier_samples_ = ModifierSamples(spec, B, shape.q_len, shape.kv_len);
  modifier_samples_.attach(args_);
  if (spec.run_time_window) {
    // A window given per call is tuned for a quarter of the keys, looking back.
    args_.window_left = std::max(1, shape.kv_len / 4);
    args_.window_right = 0;
  }
  if (spec.key_padding) {
    // Every batch but the first padded to about three quarters.
    key_lengths_ = Tensor(halide_type_t(halide_type_int, 32), B);
    for (int b = 0; b < B; ++b) {
      static_cast<int32_t*>(key_lengths_.data())[b] =
          b == 0 ? shape.kv_len : (shape.kv_len * 3 + 3) / 4;
    }
    args_.key_lengths = key_lengths_.raw_buffer();
  }
  if (spec.quantized_kv()) {
    quantized_ = quantize_kv(*k_.raw_buffer(), *v_.raw_buffer(), spec.kv_storage);
    args_.k = quantized_.k.raw_buffer();
    args_.v = quantized_.v.raw_buffer();
    args_.k_scale = quantized_.k_scale.raw_buffer();
    args_.v_scale = quantized_.v_scale.raw_buffer();
  }
  if (spec.paged()) {
    paged_ = page_cache(*args_.k, *args_.v, spec.page_size, seed);
    args_.k = paged_.k.raw_buffer();
    args_.v = paged_.v.raw_buffer();
    args_.page_table = paged_.table.raw_buffer();
    if (spec.quantized_kv()) {
      k_scale_pages_ = page_scales(quantized_.k_scale, paged_.table, spec.page_size);
      v_scale_pages_ = page_scales(quantized_.v_scale, paged_.table, spec.page_size);
      args_.k_scale = k_scale_pages_.raw_buffer();
      args_.v_scale = v_scale_pages_.raw_buffer();
    }
  }
  if (spec.bias == BiasKind::tensor) {
    bias_ = make(shape.kv_len, shape.q_len, H, B);
    fill(bias_, -2, 2, seed + 3);
    args_.bias = bias_.raw_buffer();
  }
  if (spec.bias == BiasKind::alibi) {
    slopes_ = Tensor(halide_type_t(halide_type_float, 32), H);
    for (int h = 0; h < H; ++h) {
      static_cast<float*>(slopes_.data())[h] = std::exp2(-8.0f * (h + 1) / H);
    }
    args_.alibi_slopes = slopes_.raw_buffer();
  }
}

std::vector<float> TuningInputs::as_f32(const halide_buffer_t* tensor) const {
  const Halide::Runtime::Buffer<void> view(*tensor);
  std::vector<float> values(view.number_of_elements());
  const uint8_t* data = static_cast<const uint8_t*>(view.data());
  const size_t bytes = view.type().bytes();
  for (size_t n = 0; n < values.size(); ++n) values[n] = load(data + n * bytes, spec_.dtype);
  return values;
}

std::vector<float> TuningInputs::output() {
  out_.copy_to_host();  // a GPU kernel's output is on its device
  return as_f32(out_.raw_buffer());
}

void TuningInputs::clear_output() {
  uint8_t* data = static_cast<uint8_t*>(out_.data());
  const size_t bytes = out_.type().bytes();
  for (size_t n = 0; n < out_.number_of_elements(); ++n) {
    store(data + n * bytes, spec_.dtype, std::numeric_limits<float>::quiet_NaN());
  }
  out_.set_host_dirty();  // so a GPU kernel starts from the NaNs too
}

}  // namespace attnforge::autotune
