// The decoding schedules against the reference: tile rows that group the
// query heads of a KV group, and q.k along the head dim, on every mask kind,
// with and without key splits, at Lq = 1, a few rows, and lengths that are
// not multiples of any tile or block.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

using schedules::DotAxis;
using schedules::Schedule;
using testing::kernel_target_has_presets;
using testing::preset_for;

// The kernel target's online preset with q.k along the head dim: 4-row tiles, 2x2
// register tiles, key blocks of two vectors, the next block prefetched.
Schedule dots_along_head_dim(bool group_heads, int kv_splits) {
  Schedule s = schedules::load_preset(preset_for("online"));
  s.dot_axis = DotAxis::head_dim;
  s.group_heads = group_heads;
  s.query_tile = 4;
  s.register_rows = 2;
  s.register_vectors = 2;
  s.pv_rows = 2;
  s.pv_vectors = 2;
  s.key_block = 2 * s.vector_width;
  s.kv_splits = kv_splits;
  s.prefetch_blocks = 1;
  s.parallel = {schedules::ParallelLoop::batch, schedules::ParallelLoop::heads,
                schedules::ParallelLoop::query_tiles};
  if (kv_splits > 1) s.parallel.push_back(schedules::ParallelLoop::kv_splits);
  return schedules::canonical(s);
}

void expect_reference(const std::string& spec_text, const Schedule& schedule) {
  // Decoding (Lq 1), a few rows (a tile of grouped rows spans query
  // positions), Lq > Lk, and the smallest case.
  testing::expect_jit_matches_reference(
      AttentionSpec::parse(spec_text), schedule.to_json().dump(),
      {{2, 1, 77}, {1, 3, 130}, {3, 5, 33}, {2, 40, 19}, {1, 1, 1}}, {testing::Layout::bhld}, 19);
}

TEST(DecodingJit, GroupedRowsWithDotsAlongHeadDim) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  for (const char* spec : {"causal.br.gqa4x2.d64.f32", "causal.br.kpad.alibi.gqa4x2.d64.f16",
                           "window9_3.br.mqa2.d32.f32", "full.bias.gqa4x2.d64.bf16"}) {
    expect_reference(spec, dots_along_head_dim(true, 1));
  }
}

TEST(DecodingJit, KeySplitsWithDotsAlongHeadDim) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  expect_reference("causal.kpad.mha2.d64.f32", dots_along_head_dim(false, 2));
  expect_reference("window9_3.br.alibi.mqa2.d32.f16", dots_along_head_dim(false, 2));
  Schedule grouped = dots_along_head_dim(true, 2);
  grouped.q_copy_at = schedules::StoreLevel::root;
  expect_reference("causal.br.gqa4x2.d64.bf16", grouped);
}

// Register tiles of 3 x 2 dot products, and head dims of five vectors (40
// at 8 lanes, 80 at 16), which end halfway through a register tile of two
// vectors: its last partial sums run past the head dim's end.
TEST(DecodingJit, OddRegisterTilesAndPartialRegisterTilesAlongHeadDim) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  Schedule odd_tile = dots_along_head_dim(true, 1);
  odd_tile.query_tile = 6;
  odd_tile.register_rows = 3;
  expect_reference("causal.br.kpad.gqa6x2.d64.f32", odd_tile);
  const std::string five_vectors = std::to_string(5 * odd_tile.vector_width);
  ASSERT_EQ(odd_tile.register_vectors, 2);
  expect_reference("full.gqa4x2.d" + five_vectors + ".f32", dots_along_head_dim(true, 1));
  expect_reference("window9_3.kpad.mha2.d" + five_vectors + ".bf16", dots_along_head_dim(false, 2));
}

// Grouped rows also fit the forms' tiles vectorized along query rows.
TEST(DecodingJit, GroupedRowsInQueryVectorTiles) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  for (const char* form : {"online", "fused"}) {
    Schedule s = schedules::load_preset(preset_for(form));
    s.group_heads = true;
    expect_reference(form == std::string("online") ? "causal.br.kpad.gqa4x2.d64.f32"
                                                   : "full.bias.gqa4x2.d64.f32",
                     s);
  }
}

}  // namespace
}  // namespace attnforge
