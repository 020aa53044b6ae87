#include "layer_tuning_inputs.h"

#include <cmath>
#include <limits>
#include <random>

namespace attnforge::autotune {

halide_buffer_t* LayerTuningInputs::make(std::vector<int> extents, float magnitude) {
  Tensor& tensor = tensors_.emplace_back(extents);
  std::mt19937 rng(next_seed_++);
  std::uniform_real_distribution<float> dist(-magnitude, magnitude);
  tensor.for_each_value([&](float& value) { value = dist(rng); });
  return tensor.raw_buffer();
}

LayerTuningInputs::LayerTuningInputs(const LayerSpec& spec, TuningShape shape, uint32_t seed)
    : extras_(spec.attention, shape, seed), next_seed_(seed + 100) {
  const int dm = spec.d_model, B = shape.batch, D = spec.head_dim();
  const int HD = spec.attention.heads * D, KD = spec.attention.kv_heads * D;
  const float weight = 1.0f / std::sqrt(static_cast<float>(dm));
  const bool bias = spec.projection_bias;
  args_.x_q = make({dm, shape.q_len, B}, 1.0f);
  if (spec.self_attention) {
    args_.w_qkv = make({spec.qkv_features(), dm}, weight);
    if (bias) args_.b_qkv = make({spec.qkv_features()}, 0.5f);
  } else {
    args_.x_kv = make({dm, shape.kv_len, B}, 1.0f);
    args_.w_q = make({HD, dm}, weight);
    args_.w_k = make({KD, dm}, weight);
    args_.w_v = make({KD, dm}, weight);
    if (bias) {
      args_.b_q = make({HD}, 0.5f);
      args_.b_k = make({KD}, 0.5f);
      args_.b_v = make({KD}, 0.5f);
    }
  }
  args_.w_o = make({dm, HD}, 1.0f / std::sqrt(static_cast<float>(HD)));
  if (bias) args_.b_o = make({dm}, 0.5f);
  const KernelArguments& extras = extras_.arguments();
  args_.key_lengths = extras.key_lengths;
  args_.bias = extras.bias;
  args_.alibi_slopes = extras.alibi_slopes;
  args_.scale = extras.scale;
  out_ = Tensor(dm, shape.q_len, B);
  args_.out = out_.raw_buffer();
  // The weights are an output too, but only `out` is checked and compared.
  if (spec.weights == LayerWeights::per_head) {
    weights_ = Tensor(shape.kv_len, shape.q_len, spec.attention.heads, B);
  } else if (spec.weights == LayerWeights::averaged) {
    weights_ = Tensor(shape.kv_len, shape.q_len, B);
  }
  if (spec.weights != LayerWeights::none) args_.weights = weights_.raw_buffer();
}

std::vector<float> LayerTuningInputs::output() const {
  return std::vector<float>(out_.begin(), out_.end());
}

void LayerTuningInputs::clear_output() {
  out_.fill(std::numeric_limits<float>::quiet_NaN());
}

}  // namespace attnforge::autotune
