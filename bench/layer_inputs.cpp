#include "layer_inputs.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "bench_inputs.h"

namespace attnforge::bench {

namespace {

void fill(Halide::Runtime::Buffer<float>& t, std::mt19937& rng, float magnitude) {
  std::uniform_real_distribution<float> uniform(-magnitude, magnitude);
  std::generate(t.begin(), t.end(), [&] { return uniform(rng); });
}

}  // namespace

LayerInputs::LayerInputs(const LayerSpec& spec, LayerShape shape, uint32_t seed)
    : x(spec.d_model, shape.len, shape.batch),
      w_qkv(spec.qkv_features(), spec.d_model),
      b_qkv(spec.qkv_features()),
      w_o(spec.d_model, spec.attention.heads * spec.head_dim()),
      b_o(spec.d_model),
      out(spec.d_model, shape.len, shape.batch),
      expected(spec.d_model, shape.len, shape.batch) {
  if (!spec.self_attention || !spec.projection_bias || spec.weights != LayerWeights::none ||
      spec.attention.key_padding || spec.attention.bias != BiasKind::none) {
    throw std::invalid_argument(
        "the layer benchmark runs self-attention with biases and a "
        "position mask only, not " +
        spec.to_string());
  }
  std::mt19937 rng(seed);
  fill(x, rng, 1.0f);
  fill(w_qkv, rng, 1.0f / std::sqrt(static_cast<float>(spec.d_model)));
  fill(b_qkv, rng, 0.5f);
  fill(w_o, rng, 1.0f / std::sqrt(static_cast<float>(w_o.dim(1).extent())));
  fill(b_o, rng, 0.5f);
  args.x_q = x.raw_buffer();
  args.w_qkv = w_qkv.raw_buffer();
  args.b_qkv = b_qkv.raw_buffer();
  args.w_o = w_o.raw_buffer();
  args.b_o = b_o.raw_buffer();
  args.out = out.raw_buffer();
  args.scale = default_scale(spec.head_dim());
}

}  // namespace attnforge::bench
