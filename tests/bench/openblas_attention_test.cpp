// The OpenBLAS unfused peer against the double-precision reference, and the
// FLOP count the benchmark rates every implementation by.
#include "bench/openblas_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "bench/bench_rows.h"
#include "tests/reference/attention_reference.h"

namespace attnforge::bench {
namespace {

// f32 sgemm and softmax over at most a few hundred keys of values in [-1, 1].
constexpr double kTolerance = 1e-4;

struct Case {
  const char* spec;
  int batch, q_len, kv_len;
};

// Random f32 inputs; the reference gets the same (rounded) values in double.
double max_error_vs_reference(const Case& c, int threads = 1) {
  reference::Problem p;
  p.spec = AttentionSpec::parse(c.spec);
  p.batch = c.batch;
  p.q_len = c.q_len;
  p.kv_len = c.kv_len;
  p.scale = default_scale(p.spec.head_dim);
  const size_t D = p.spec.head_dim;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto make = [&](size_t heads, size_t len, std::vector<double>& values) {
    std::vector<float> data(c.batch * heads * len * D);
    for (float& x : data) x = uniform(rng);
    values.assign(data.begin(), data.end());
    return data;
  };
  std::vector<float> q = make(p.spec.heads, c.q_len, p.q);
  std::vector<float> k = make(p.spec.kv_heads, c.kv_len, p.k);
  std::vector<float> v = make(p.spec.kv_heads, c.kv_len, p.v);
  std::vector<float> out(q.size(), std::nanf(""));

  OpenBlasAttention blas(p.spec);
  blas.set_num_threads(threads);
  blas.run(q.data(), k.data(), v.data(), out.data(), c.batch, c.q_len, c.kv_len,
           static_cast<float>(p.scale));
  reference::Result expected = reference::attention(p);

  double worst = 0.0;
  for (size_t n = 0; n < out.size(); ++n) {
    double error = std::fabs(out[n] - expected.out[n]);
    if (!(error <= worst)) worst = error;  // keeps a NaN
  }
  return worst;
}

TEST(OpenBlasAttention, NonCausalMatchesReference) {
  EXPECT_LE(max_error_vs_reference({"full.mha3.d5.f32", 2, 7, 9}), kTolerance);
  EXPECT_LE(max_error_vs_reference({"full.mha1.d13.f32", 1, 1, 17}), kTolerance);
}

TEST(OpenBlasAttention, CausalTopLeftMatchesReference) {
  EXPECT_LE(max_error_vs_reference({"causal.mha2.d7.f32", 1, 11, 11}), kTolerance);
  EXPECT_LE(max_error_vs_reference({"causal.mha2.d7.f32", 2, 5, 9}), kTolerance);
  EXPECT_LE(max_error_vs_reference({"causal.mha2.d7.f32", 1, 9, 5}), kTolerance);
}

TEST(OpenBlasAttention, CausalBottomRightMatchesReference) {
  EXPECT_LE(max_error_vs_reference({"causal.br.mha2.d6.f32", 1, 3, 10}), kTolerance);
  // More queries than keys: the first Lq - Lk rows see nothing and must be zero.
  EXPECT_LE(max_error_vs_reference({"causal.br.mha2.d6.f32", 2, 10, 4}), kTolerance);
}

TEST(OpenBlasAttention, GroupedQueryHeadsShareKeyValueHeads) {
  EXPECT_LE(max_error_vs_reference({"full.gqa6x2.d5.f32", 2, 7, 9}), kTolerance);
  EXPECT_LE(max_error_vs_reference({"causal.br.gqa4x2.d3.f32", 1, 9, 6}), kTolerance);
  EXPECT_LE(max_error_vs_reference({"causal.mqa3.d9.f32", 1, 5, 5}), kTolerance);
}

TEST(OpenBlasAttention, ThreadedSoftmaxMatchesReference) {
  // 300 x 520 scores are enough for the softmax to split rows across two threads.
  EXPECT_LE(max_error_vs_reference({"causal.br.mha1.d8.f32", 1, 300, 520}, 2), kTolerance);
}

TEST(OpenBlasAttention, RejectsSpecsItCannotRun) {
  EXPECT_THROW(OpenBlasAttention(AttentionSpec::parse("full.mha2.d8.f16")), std::invalid_argument);
  EXPECT_THROW(OpenBlasAttention(AttentionSpec::parse("full.bias.mha2.d8.f32")),
               std::invalid_argument);
}

TEST(AttentionFlops, CountsCausalPairsExactly) {
  const AttentionSpec full = AttentionSpec::parse("full.mha1.d64.f32");
  const AttentionSpec top_left = AttentionSpec::parse("causal.mha1.d64.f32");
  const AttentionSpec bottom_right = AttentionSpec::parse("causal.br.mha1.d64.f32");
  EXPECT_EQ(attended_pairs(full, 3, 7), 21);
  EXPECT_EQ(attended_pairs(top_left, 4, 4), 10);     // 1 + 2 + 3 + 4
  EXPECT_EQ(attended_pairs(top_left, 5, 3), 12);     // 1 + 2 + 3 + 3 + 3
  EXPECT_EQ(attended_pairs(bottom_right, 2, 5), 9);  // 4 + 5
  EXPECT_EQ(attended_pairs(bottom_right, 4, 2), 3);  // 0 + 0 + 1 + 2
  EXPECT_EQ(attended_pairs(bottom_right, 4, 4), attended_pairs(top_left, 4, 4));
}

TEST(AttentionFlops, FourFlopsPerPairAndHeadDimElement) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.gqa8x2.d64.f32");
  EXPECT_DOUBLE_EQ(attention_flops(spec, 3, 2, 5), 4.0 * 3 * 8 * 64 * 9);
}

}  // namespace
}  // namespace attnforge::bench
