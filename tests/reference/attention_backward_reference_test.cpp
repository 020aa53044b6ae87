// The backward reference against finite differences of the forward
// reference: the gradient of loss = sum(d_out * out) by each input element.
#include "attention_backward_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace attnforge::reference {
namespace {

Problem random_problem(const std::string& spec, int batch, int q_len, int kv_len, uint32_t seed) {
  Problem p;
  p.spec = AttentionSpec::parse(spec);
  p.batch = batch;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.scale = 0.7;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.5, 1.5);
  const int D = p.spec.head_dim;
  p.q.resize(static_cast<size_t>(batch) * p.spec.heads * q_len * D);
  p.k.resize(static_cast<size_t>(batch) * p.spec.kv_heads * kv_len * D);
  p.v.resize(p.k.size());
  for (auto* values : {&p.q, &p.k, &p.v}) {
    for (double& x : *values) x = uniform(rng);
  }
  if (p.spec.key_padding) {
    for (int b = 0; b < batch; ++b) p.key_lengths.push_back(b == 1 ? 0 : kv_len - b);
  }
  if (p.spec.bias == BiasKind::tensor) {
    p.bias_batch = batch;
    p.bias_heads = p.spec.heads;
    p.bias.resize(static_cast<size_t>(batch) * p.spec.heads * q_len * kv_len);
    for (double& x : p.bias) x = uniform(rng);
  }
  if (p.spec.bias == BiasKind::alibi) {
    for (int h = 0; h < p.spec.heads; ++h) p.alibi_slopes.push_back(0.5 / (h + 1));
  }
  return p;
}

double loss(const Problem& p, const std::vector<double>& d_out) {
  const Result r = attention(p);
  double sum = 0.0;
  for (size_t n = 0; n < r.out.size(); ++n) sum += d_out[n] * r.out[n];
  return sum;
}

// Each element's gradient against (loss(x + e) - loss(x - e)) / 2e.
void expect_matches_finite_differences(const std::string& spec, int batch, int q_len, int kv_len) {
  Problem p = random_problem(spec, batch, q_len, kv_len, 7);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> d_out(static_cast<size_t>(batch) * p.spec.heads * q_len * p.spec.head_dim);
  for (double& x : d_out) x = uniform(rng);
  const Gradients g = attention_backward(p, d_out);
  constexpr double kStep = 1e-5, kTolerance = 1e-7;
  std::vector<std::tuple<std::vector<double>*, const std::vector<double>*, const char*>> inputs = {
      {&p.q, &g.dq, "dq"}, {&p.k, &g.dk, "dk"}, {&p.v, &g.dv, "dv"}};
  if (p.spec.bias == BiasKind::tensor) inputs.emplace_back(&p.bias, &g.d_bias, "d_bias");
  for (auto [values, gradient, name] : inputs) {
    ASSERT_EQ(values->size(), gradient->size()) << name;
    for (size_t n = 0; n < values->size(); ++n) {
      const double saved = (*values)[n];
      (*values)[n] = saved + kStep;
      const double above = loss(p, d_out);
      (*values)[n] = saved - kStep;
      const double below = loss(p, d_out);
      (*values)[n] = saved;
      EXPECT_NEAR((*gradient)[n], (above - below) / (2 * kStep), kTolerance)
          << spec << " " << name << "[" << n << "]";
    }
  }
}

TEST(BackwardReference, MatchesFiniteDifferencesOfTheForward) {
  expect_matches_finite_differences("full.mha2.d4.f32", 1, 3, 5);
  expect_matches_finite_differences("causal.br.kpad.gqa4x2.d4.f32", 3, 4, 6);
  expect_matches_finite_differences("causal.alibi.softcap2.mqa2.d3.f32", 2, 5, 3);
  expect_matches_finite_differences("window1_1.bias.mha1.d2.f32", 1, 1, 4);
  expect_matches_finite_differences("causal.br.kpad.bias.softcap2.gqa4x2.d3.f32", 3, 4, 5);
}

TEST(BackwardReference, ARowThatSeesNoKeyHasZeroGradientsAndInfiniteLse) {
  Problem p = random_problem("causal.br.kpad.mha1.d2.f32", 2, 2, 3, 3);  // batch 1: no keys
  std::vector<double> d_out(2 * 2 * 2, 1.0);
  const Result forward = attention(p);
  const Gradients g = attention_backward(p, d_out);
  for (int n = 0; n < 4; ++n) EXPECT_EQ(g.dq[4 + n], 0.0);
  for (int n = 0; n < 6; ++n) EXPECT_EQ(g.dk[6 + n] + g.dv[6 + n], 0.0);
  EXPECT_TRUE(std::isinf(forward.lse[2]) && forward.lse[2] > 0);
  // Batch 0 sees its keys: lse is the log of its exp-sum.
  EXPECT_TRUE(std::isfinite(forward.lse[0]));
}

TEST(BackwardReference, LseIsTheLogOfTheExpSum) {
  Problem p = random_problem("full.mha1.d2.f32", 1, 1, 3, 5);
  for (double& x : p.k) x = 0.0;  // every logit 0: lse = log 3
  EXPECT_NEAR(attention(p).lse[0], std::log(3.0), 1e-15);
}

}  // namespace
}  // namespace attnforge::reference
