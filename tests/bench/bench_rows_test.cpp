// A paged row's vs_contiguous: the per-turn ratio to the same implementation
// and thread count on the same spec with a contiguous cache, and nothing where
// there is no such row; an 8-bit cache row's vs_bf16 likewise against its
// spec with a bf16 cache; a modifier row's vs_plain against its spec
// without the modifier.
#include "bench/bench_rows.h"

#include <gtest/gtest.h>

#include <vector>

namespace attnforge::bench {
namespace {

BenchRow row(const char* spec, const char* impl, int threads) {
  BenchRow r;
  r.spec = AttentionSpec::parse(spec).to_string();
  r.shape = "B1 H4 Lq1 Lk256 D64";
  r.impl = impl;
  r.threads = threads;
  return r;
}

Timing rounds(std::vector<double> ms) {
  Timing t;
  t.round_ms = std::move(ms);
  return t;
}

TEST(VsContiguous, PagedRowsAgainstTheSameImplOnTheContiguousSpec) {
  const char* paged = "causal.br.kpad.page16.gqa4x2.d64.f32";
  const char* contiguous = "causal.br.kpad.gqa4x2.d64.f32";
  std::vector<BenchRow> rows = {row(paged, "decode", 2), row(contiguous, "other", 2),
                                row(contiguous, "decode", 2), row(paged, "other", 1),
                                row(paged, "only_paged", 2)};
  const std::vector<Timing> timings = {rounds({12, 26, 11}), rounds({1, 1, 1}),
                                       rounds({10, 20, 10}), rounds({5, 5, 5}), rounds({7, 7, 7})};
  set_vs_contiguous(rows, timings);
  EXPECT_DOUBLE_EQ(rows[0].vs_contiguous, 1.2);  // ratios 1.2, 1.3, 1.1
  EXPECT_EQ(rows[1].vs_contiguous, 0.0);         // contiguous rows have none
  EXPECT_EQ(rows[2].vs_contiguous, 0.0);
  EXPECT_EQ(rows[3].vs_contiguous, 0.0);  // "other" ran on 2 threads only
  EXPECT_EQ(rows[4].vs_contiguous, 0.0);
}

TEST(VsBf16, EightBitRowsAgainstTheSameImplOnABf16Cache) {
  const char* f32_queries = "causal.br.gqa4x2.d64.f32.kv8";
  const char* bf16_queries = "causal.br.gqa4x2.d64.bf16.kv8";
  const char* bf16 = "causal.br.gqa4x2.d64.bf16";
  std::vector<BenchRow> rows = {
      row(f32_queries, "decode", 2), row(bf16_queries, "decode", 2),
      row(bf16, "decode", 2),        row("causal.br.gqa4x2.d64.f32", "decode", 2),
      row(f32_queries, "other", 2),  row("causal.br.gqa4x2.d64.bf16.kvfp8", "decode", 2)};
  const std::vector<Timing> timings = {rounds({5, 6, 5}),    rounds({4, 4, 6}),
                                       rounds({10, 10, 10}), rounds({20, 20, 20}),
                                       rounds({1, 1, 1}),    rounds({7, 7, 7})};
  set_vs_bf16(rows, timings);
  EXPECT_DOUBLE_EQ(rows[0].vs_bf16, 0.5);  // ratios 0.5, 0.6, 0.5
  EXPECT_DOUBLE_EQ(rows[1].vs_bf16, 0.4);
  EXPECT_EQ(rows[2].vs_bf16, 0.0);  // rows without kv8 have none
  EXPECT_EQ(rows[3].vs_bf16, 0.0);
  EXPECT_EQ(rows[4].vs_bf16, 0.0);  // no bf16 row of "other"
  EXPECT_DOUBLE_EQ(rows[5].vs_bf16, 0.7);
}

TEST(VsPlain, ModifierRowsAgainstTheSpecWithoutThem) {
  std::vector<BenchRow> rows = {row("causal.softcap30.mha2.d64.f32", "online", 2),
                                row("causal.mha2.d64.f32", "online", 2),
                                row("window.mha2.d64.f32", "online", 2),
                                row("window256_0.mha2.d64.f32", "online", 2),
                                row("window.softcap5.mha2.d64.f32", "online", 2),
                                row("window.mha2.d64.f32", "other", 2),
                                row("causal.moddoc_0123abcd.mha2.d64.f32", "online", 2)};
  const std::vector<Timing> timings = {
      rounds({11, 12, 11}), rounds({10, 10, 10}), rounds({9, 10, 10}), rounds({10, 10, 10}),
      rounds({12, 12, 12}), rounds({1, 1, 1}),    rounds({3, 3, 3})};
  ASSERT_EQ(rows.size(), timings.size());
  set_vs_plain(rows, timings, {256, 0});
  EXPECT_DOUBLE_EQ(rows[0].vs_plain, 1.1);  // ratios 1.1, 1.2, 1.1
  EXPECT_EQ(rows[1].vs_plain, 0.0);         // plain rows have none
  EXPECT_DOUBLE_EQ(rows[2].vs_plain, 1.0);  // against the window compiled in
  EXPECT_EQ(rows[3].vs_plain, 0.0);
  EXPECT_DOUBLE_EQ(rows[4].vs_plain, 1.2);  // no softcap, the window compiled in
  EXPECT_EQ(rows[5].vs_plain, 0.0);         // no plain row of "other"
  EXPECT_DOUBLE_EQ(rows[6].vs_plain, 0.3);  // against the spec without its modifier
}

}  // namespace
}  // namespace attnforge::bench
