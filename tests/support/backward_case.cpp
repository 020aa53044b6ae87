#include "backward_case.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

namespace attnforge::testing {

Tolerance backward_tolerance_for(DType dtype) {
  if (dtype == DType::f32) return tolerance_for(dtype);
  const Tolerance forward = tolerance_for(dtype);
  return {2 * forward.atol, 2 * forward.rtol};
}

BackwardCase::BackwardCase(const AttentionSpec& spec, CaseShape shape, CaseOptions options)
    : forward_(forward_spec_of(spec), shape, options) {
  const int D = spec.head_dim, H = spec.heads;
  const HostTensor::Extents rows{D, shape.q_len, H, shape.batch};
  const HostTensor::Extents keys{D, shape.kv_len, spec.kv_heads, shape.batch};
  const HostTensor::Extents order = memory_order_for(options.layout);
  const halide_type_t storage = halide_type_of(spec.dtype);
  out_ = std::make_unique<HostTensor>(storage, rows, order);
  d_out_ = std::make_unique<HostTensor>(storage, rows, order);
  dq_ = std::make_unique<HostTensor>(storage, rows, order);
  dk_ = std::make_unique<HostTensor>(storage, keys, order);
  dv_ = std::make_unique<HostTensor>(storage, keys, order);
  lse_ = std::make_unique<HostTensor>(halide_type_t(halide_type_float, 32),
                                      HostTensor::Extents{shape.q_len, H, shape.batch, 1});
  if (spec.bias_grad) {
    d_bias_ = std::make_unique<HostTensor>(
        storage, HostTensor::Extents{shape.kv_len, shape.q_len, H, shape.batch});
  }

  const reference::Problem& problem = forward_.problem();
  const reference::Result forward = reference::attention(problem);
  std::mt19937 rng(options.seed + 101);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < shape.q_len; ++i) {
        const size_t row = (static_cast<size_t>(b) * H + h) * shape.q_len + i;
        lse_->set({i, h, b, 0}, forward.lse[row]);
        for (int d = 0; d < D; ++d) {
          out_->set({d, i, h, b}, forward.out[row * D + d]);
          d_out_->set({d, i, h, b}, uniform(rng));
        }
      }
    }
  }
  expected_ = reference::attention_backward(problem, d_out_->values());

  const KernelArguments& in = forward_.arguments();
  args_.q = in.q;
  args_.k = in.k;
  args_.v = in.v;
  args_.key_lengths = in.key_lengths;
  args_.bias = in.bias;
  args_.alibi_slopes = in.alibi_slopes;
  args_.scale = in.scale;
  args_.window_left = in.window_left;
  args_.window_right = in.window_right;
  args_.out = out_->raw();
  args_.d_out = d_out_->raw();
  args_.lse = lse_->raw();
  args_.lse->dimensions = 3;
  args_.dq = dq_->raw();
  args_.dk = dk_->raw();
  args_.dv = dv_->raw();
  if (d_bias_) args_.d_bias = d_bias_->raw();
}

void BackwardCase::take_forward_outputs() {
  args_.out = forward_.arguments().out;
  args_.lse = forward_.arguments().lse;
}

Comparison BackwardCase::compare() const {
  return compare(backward_tolerance_for(forward_.problem().spec.dtype));
}

Comparison BackwardCase::compare(Tolerance tolerance) const {
  Comparison all;
  std::vector<std::tuple<std::vector<double>, const std::vector<double>*, const char*>> gradients =
      {{dq(), &expected_.dq, "dq"}, {dk(), &expected_.dk, "dk"}, {dv(), &expected_.dv, "dv"}};
  if (d_bias_) gradients.emplace_back(d_bias(), &expected_.d_bias, "d_bias");
  for (const auto& [actual, expected, name] : gradients) {
    double largest = 1.0;
    for (double x : *expected) largest = std::max(largest, std::fabs(x));
    const Comparison c =
        compare_values(actual, *expected, {tolerance.atol * largest, tolerance.rtol}, name);
    all.max_error = std::max(all.max_error, c.max_error);
    if (!c.ok && all.ok) all.first_failure = c.first_failure;
    all.ok = all.ok && c.ok;
  }
  return all;
}

}  // namespace attnforge::testing
