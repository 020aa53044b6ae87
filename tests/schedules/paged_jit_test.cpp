// Paged KV caches against the reference: each sequence's K/V pages at
// shuffled places, -1 table entries past its length, under the presets and
// the decoding schedules, at page sizes that do and do not divide the lengths.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

void expect_reference(const char* spec_text, const std::string& schedule) {
  testing::expect_cache_reads_match_reference(spec_text, schedule, 23);
}

TEST(PagedJit, NaiveReadsShuffledPages) {
  expect_reference("causal.br.kpad.page16.gqa4x2.d32.f32", "naive");
}

TEST(PagedJit, PresetsReadShuffledPages) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const std::string decode = testing::preset_for("decode");
  expect_reference("causal.br.kpad.page16.gqa4x2.d64.f32", decode);
  expect_reference("window9_3.br.kpad.page8.alibi.mqa2.d32.bf16", decode);
  expect_reference("full.kpad.page32.mha2.d64.f16", testing::preset_for("online"));
  // Pages of the key block's size, and larger: read by key, not by page.
  expect_reference("causal.br.kpad.page128.gqa4x2.d64.bf16", decode);
  expect_reference("causal.kpad.page256.mha2.d32.f32", testing::preset_for("online"));
  expect_reference("causal.kpad.page1.mha2.d32.f32", testing::preset_for("materialized"));
}

}  // namespace
}  // namespace attnforge
