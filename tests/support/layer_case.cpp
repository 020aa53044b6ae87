#include "layer_case.h"

#include <cmath>
#include <random>

namespace attnforge::testing {

namespace {

using Buffer = Halide::Runtime::Buffer<float>;

// Uniform in [-magnitude, magnitude], in row-major order of the reversed dims.
std::vector<double> fill_uniform(Buffer& buffer, std::mt19937& rng, double magnitude) {
  std::uniform_real_distribution<float> dist(-magnitude, magnitude);
  buffer.for_each_value([&](float& value) { value = dist(rng); });
  return row_major_values(buffer);
}

// Output features first..first + count of a packed [in][out] weight or [out] bias.
std::vector<double> columns(const std::vector<double>& packed, int in, int out, int first,
                            int count) {
  std::vector<double> part;
  for (int c = 0; c < in; ++c) {
    for (int n = first; n < first + count; ++n)
      part.push_back(packed[static_cast<size_t>(c) * out + n]);
  }
  return part;
}

}  // namespace

std::vector<double> row_major_values(const Buffer& buffer) {
  std::vector<double> values;
  values.reserve(buffer.number_of_elements());
  buffer.for_each_value([&](const float& value) { values.push_back(value); });
  return values;
}

LayerCase::LayerCase(const LayerSpec& spec, CaseShape shape, uint32_t seed)
    : spec_(spec), extras_(spec.attention, shape, {.seed = seed}) {
  spec.validate();
  std::mt19937 rng(seed + 1);
  const int B = shape.batch, Lq = shape.q_len, Lk = shape.kv_len, dm = spec.d_model;
  const int HD = spec.attention.heads * spec.head_dim();
  const int KD = spec.attention.kv_heads * spec.head_dim();
  const double weight_magnitude = 1.0 / std::sqrt(static_cast<double>(dm));
  const bool bias = spec.projection_bias;

  problem_.spec = spec;
  problem_.attention = extras_.problem();
  x_q_ = Buffer(dm, Lq, B);
  problem_.x_q = fill_uniform(x_q_, rng, 1.0);
  args_.x_q = x_q_.raw_buffer();
  if (spec.self_attention) {
    const int N = spec.qkv_features();
    w_qkv_ = Buffer(N, dm);
    std::vector<double> packed = fill_uniform(w_qkv_, rng, weight_magnitude);
    problem_.w_q = columns(packed, dm, N, 0, HD);
    problem_.w_k = columns(packed, dm, N, HD, KD);
    problem_.w_v = columns(packed, dm, N, HD + KD, KD);
    args_.w_qkv = w_qkv_.raw_buffer();
    if (bias) {
      b_qkv_ = Buffer(N);
      std::vector<double> packed_bias = fill_uniform(b_qkv_, rng, 0.5);
      problem_.b_q = columns(packed_bias, 1, N, 0, HD);
      problem_.b_k = columns(packed_bias, 1, N, HD, KD);
      problem_.b_v = columns(packed_bias, 1, N, HD + KD, KD);
      args_.b_qkv = b_qkv_.raw_buffer();
    }
  } else {
    x_kv_ = Buffer(dm, Lk, B);
    problem_.x_kv = fill_uniform(x_kv_, rng, 1.0);
    args_.x_kv = x_kv_.raw_buffer();
    struct Part {
      Buffer& weight;
      Buffer& bias;
      std::vector<double>& w;
      std::vector<double>& b;
      int features;
      halide_buffer_t*& w_arg;
      halide_buffer_t*& b_arg;
    };
    for (Part part : {Part{w_q_, b_q_, problem_.w_q, problem_.b_q, HD, args_.w_q, args_.b_q},
                      Part{w_k_, b_k_, problem_.w_k, problem_.b_k, KD, args_.w_k, args_.b_k},
                      Part{w_v_, b_v_, problem_.w_v, problem_.b_v, KD, args_.w_v, args_.b_v}}) {
      part.weight = Buffer(part.features, dm);
      part.w = fill_uniform(part.weight, rng, weight_magnitude);
      part.w_arg = part.weight.raw_buffer();
      if (bias) {
        part.bias = Buffer(part.features);
        part.b = fill_uniform(part.bias, rng, 0.5);
        part.b_arg = part.bias.raw_buffer();
      }
    }
  }
  w_o_ = Buffer(dm, HD);
  problem_.w_o = fill_uniform(w_o_, rng, 1.0 / std::sqrt(static_cast<double>(HD)));
  args_.w_o = w_o_.raw_buffer();
  if (bias) {
    b_o_ = Buffer(dm);
    problem_.b_o = fill_uniform(b_o_, rng, 0.5);
    args_.b_o = b_o_.raw_buffer();
  }
  KernelArguments& extras = extras_.arguments();
  args_.key_lengths = extras.key_lengths;
  args_.bias = extras.bias;
  args_.alibi_slopes = extras.alibi_slopes;
  args_.scale = extras.scale;
  out_ = Buffer(dm, Lq, B);
  args_.out = out_.raw_buffer();
  if (spec.weights == LayerWeights::per_head) weights_ = Buffer(Lk, Lq, spec.attention.heads, B);
  if (spec.weights == LayerWeights::averaged) weights_ = Buffer(Lk, Lq, B);
  if (spec.weights != LayerWeights::none) args_.weights = weights_.raw_buffer();
}

std::vector<double> LayerCase::output() const {
  return row_major_values(out_);
}

Comparison LayerCase::compare(Tolerance tolerance) const {
  reference::LayerResult expected = reference::layer(problem_);
  Comparison result = compare_values(output(), expected.out, tolerance, "out");
  if (spec_.weights != LayerWeights::none) {
    Comparison w =
        compare_values(row_major_values(weights_), expected.weights, tolerance, "weights");
    result.max_error = std::max(result.max_error, w.max_error);
    if (result.ok && !w.ok) result.first_failure = w.first_failure;
    result.ok = result.ok && w.ok;
  }
  return result;
}

}  // namespace attnforge::testing
