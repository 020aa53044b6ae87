// The OpenBLAS unfused peer against the double-precision reference, and the
// FLOP count the benchmark rates every implementation by.
#include "bench/openblas_attention.h"

#include <gtest/gtest.h>

#include "bench/bench_rows.h"
#include "tests/support/attention_case.h"

namespace attnforge::bench {
namespace {

// One problem run through OpenBLAS attention and compared with the reference
// at the f32 tolerance of tests/support (1e-4 absolute plus relative).
void expect_matches(const char* spec, testing::CaseShape shape, int threads = 1) {
  testing::AttentionCase c(AttentionSpec::parse(spec), shape);
  KernelArguments& args = c.arguments();  // f32 (B, H, L, D) contiguous
  OpenBlasAttention blas(c.problem().spec);
  blas.set_num_threads(threads);
  blas.run(static_cast<const float*>(static_cast<void*>(args.q->host)),
           static_cast<const float*>(static_cast<void*>(args.k->host)),
           static_cast<const float*>(static_cast<void*>(args.v->host)),
           static_cast<float*>(static_cast<void*>(args.out->host)), shape.batch, shape.q_len,
           shape.kv_len, args.scale);
  testing::Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << spec << " threads " << threads << ": " << result.first_failure;
}

TEST(OpenBlasAttention, NonCausalMatchesReference) {
  expect_matches("full.mha3.d5.f32", {2, 7, 9});
  expect_matches("full.mha1.d13.f32", {1, 1, 17});
}

TEST(OpenBlasAttention, CausalTopLeftMatchesReference) {
  expect_matches("causal.mha2.d7.f32", {1, 11, 11});
  expect_matches("causal.mha2.d7.f32", {2, 5, 9});
  expect_matches("causal.mha2.d7.f32", {1, 9, 5});
}

TEST(OpenBlasAttention, CausalBottomRightMatchesReference) {
  expect_matches("causal.br.mha2.d6.f32", {1, 3, 10});
  // More queries than keys: the first Lq - Lk rows see nothing and must be zero.
  expect_matches("causal.br.mha2.d6.f32", {2, 10, 4});
}

TEST(OpenBlasAttention, GroupedQueryHeadsShareKeyValueHeads) {
  expect_matches("full.gqa6x2.d5.f32", {2, 7, 9});
  expect_matches("causal.br.gqa4x2.d3.f32", {1, 9, 6});
  expect_matches("causal.mqa3.d9.f32", {1, 5, 5});
}

TEST(OpenBlasAttention, ThreadedSoftmaxMatchesReference) {
  // One head of 300 x 520 scores: threads go inside sgemm and across softmax rows.
  expect_matches("causal.br.mha1.d8.f32", {1, 300, 520}, 2);
}

TEST(OpenBlasAttention, ThreadsAcrossHeadsMatchReference) {
  // Five (batch, head) pairs over two threads, each with its own scores.
  expect_matches("causal.mqa5.d8.f32", {1, 33, 40}, 2);
  expect_matches("full.mha3.d8.f32", {2, 7, 12}, 2);
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

// Q and out once, K and V for every kv head over the keys some row sees, the
// bias's visible entries; in the storage dtype.
TEST(AttentionBytes, CountTheRowsAndTheKeysSeen) {
  const AttentionSpec gqa = AttentionSpec::parse("full.gqa8x2.d64.f32");
  EXPECT_DOUBLE_EQ(attention_bytes(gqa, 2, 1, 100), 4.0 * 2 * (2 * 8 * 64 + 2 * 2 * 100 * 64));
  // Decoding under a window of 4 behind: the last 5 of 100 keys.
  const AttentionSpec window = AttentionSpec::parse("window4_0.br.mha1.d2.f16");
  EXPECT_DOUBLE_EQ(attention_bytes(window, 1, 1, 100), 2.0 * 2 * (2 + 5 * 2));
  // Causal, top-left: 4 rows see keys 0..3 of 10.
  const AttentionSpec causal = AttentionSpec::parse("causal.mha1.d1.f32");
  EXPECT_DOUBLE_EQ(attention_bytes(causal, 1, 4, 10), 4.0 * 2 * (4 + 4));
  const AttentionSpec bias = AttentionSpec::parse("full.bias.mha1.d1.f32");
  EXPECT_DOUBLE_EQ(attention_bytes(bias, 1, 2, 3), 4.0 * 2 * (2 + 3) + 4.0 * 6);
}

}  // namespace
}  // namespace attnforge::bench
