// The reference checked against cases whose answer is known by hand.
#include "attention_reference.h"

#include <gtest/gtest.h>

#include <cmath>

namespace attnforge::reference {
namespace {

Problem make_problem(const char* spec, int batch, int q_len, int kv_len) {
  Problem p;
  p.spec = AttentionSpec::parse(spec);
  p.batch = batch;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.scale = 1.0;
  int D = p.spec.head_dim;
  p.q.assign(static_cast<size_t>(batch) * p.spec.heads * q_len * D, 0.0);
  p.k.assign(static_cast<size_t>(batch) * p.spec.kv_heads * kv_len * D, 0.0);
  p.v.assign(p.k.size(), 0.0);
  // v[b][h][j][d] = j + 100 * d: each output is a readable weighted key index.
  for (size_t n = 0; n < p.v.size(); ++n) {
    size_t d = n % D, j = (n / D) % kv_len;
    p.v[n] = static_cast<double>(j) + 100.0 * d;
  }
  return p;
}

double out_at(const Problem& p, const Result& r, int b, int h, int i, int d) {
  return r.out[((static_cast<size_t>(b) * p.spec.heads + h) * p.q_len + i) * p.spec.head_dim + d];
}

TEST(Reference, EqualLogitsAverageTheVisibleValues) {
  Problem p = make_problem("full.mha1.d2.f32", 1, 3, 4);
  Result r = attention(p);
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, i, 0), 1.5);  // mean of 0..3
    EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, i, 1), 101.5);
  }
}

TEST(Reference, CausalTopLeftSeesKeysUpToItsRow) {
  Problem p = make_problem("causal.mha1.d1.f32", 1, 3, 5);
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 0.0);  // key 0 only
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 1, 0), 0.5);  // keys 0..1
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 2, 0), 1.0);  // keys 0..2
}

TEST(Reference, CausalBottomRightAlignsTheLastQueryWithTheLastKey) {
  Problem p = make_problem("causal.br.mha1.d1.f32", 1, 2, 5);
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 1.5);  // keys 0..3
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 1, 0), 2.0);  // keys 0..4
}

TEST(Reference, BottomRightWithMoreQueriesThanKeysLeavesEarlyRowsZero) {
  Problem p = make_problem("causal.br.mha1.d1.f32", 1, 4, 2);
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 0.0);  // sees nothing
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 1, 0), 0.0);  // sees nothing
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 2, 0), 0.0);  // key 0
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 3, 0), 0.5);  // keys 0..1
  EXPECT_DOUBLE_EQ(r.weights[0], 0.0);
}

TEST(Reference, WindowSeesItsBand) {
  Problem p = make_problem("window1_2.mha1.d1.f32", 1, 4, 8);
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 1.0);  // keys 0..2
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 3, 0), 3.5);  // keys 2..5
}

TEST(Reference, KeyPaddingMasksPerBatchAndZeroLengthGivesZeros) {
  Problem p = make_problem("full.kpad.mha1.d1.f32", 2, 2, 6);
  p.key_lengths = {3, 0};
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 1, 0), 1.0);  // keys 0..2
  EXPECT_DOUBLE_EQ(out_at(p, r, 1, 0, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(out_at(p, r, 1, 0, 1, 0), 0.0);
}

TEST(Reference, GroupedQueryHeadsShareTheirKeyValueHead) {
  Problem p = make_problem("full.gqa4x2.d1.f32", 1, 1, 2);
  for (size_t n = 0; n < p.v.size(); ++n) p.v[n] = static_cast<double>(n);  // [h_kv][j]
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 0.5);  // heads 0, 1 -> kv head 0: v = 0, 1
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 1, 0, 0), 0.5);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 2, 0, 0), 2.5);  // heads 2, 3 -> kv head 1: v = 2, 3
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 3, 0, 0), 2.5);
}

TEST(Reference, BiasShiftsTheSoftmaxAndBroadcasts) {
  Problem p = make_problem("full.bias.mha2.d1.f32", 1, 1, 2);
  p.bias = {0.0, std::log(3.0)};  // [1][1][1][2], broadcast over heads
  Result r = attention(p);
  EXPECT_NEAR(out_at(p, r, 0, 0, 0, 0), 0.75, 1e-15);  // weights 1/4, 3/4
  EXPECT_NEAR(out_at(p, r, 0, 1, 0, 0), 0.75, 1e-15);
}

TEST(Reference, MinusInfinityBiasMasksAndAllMaskedRowIsZero) {
  Problem p = make_problem("full.bias.mha1.d1.f32", 1, 2, 2);
  const double inf = std::numeric_limits<double>::infinity();
  p.bias = {-inf, 0.0, -inf, -1e31};
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 1, 0), 0.0);
}

TEST(Reference, AlibiPenalizesDistance) {
  Problem p = make_problem("full.alibi.mha1.d1.f32", 1, 1, 2);
  p.alibi_slopes = {std::log(2.0)};  // key 1 is one step away: weight ratio 1:2
  Result r = attention(p);
  EXPECT_NEAR(out_at(p, r, 0, 0, 0, 0), 1.0 / 3.0, 1e-15);
}

TEST(Reference, HugeLogitsPickTheLargest) {
  Problem p = make_problem("full.mha1.d1.f32", 1, 1, 3);
  p.q = {1e4};
  p.k = {1.0, 3.0, 2.0};
  Result r = attention(p);
  EXPECT_DOUBLE_EQ(out_at(p, r, 0, 0, 0, 0), 1.0);
}

}  // namespace
}  // namespace attnforge::reference
