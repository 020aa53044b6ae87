// 8-bit KV caches (kv8) against the reference on the dequantized cache: int8
// rows with a scale per row, contiguous and paged, under the naive schedule
// and every x86 form's preset, with masks, GQA/MQA, ALiBi, f32 and bf16 queries.
#include <gtest/gtest.h>

#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

void expect_reference(const char* spec_text, const std::string& schedule) {
  testing::expect_cache_reads_match_reference(spec_text, schedule, 31);
}

TEST(QuantizedCacheJit, NaiveReadsInt8Rows) {
  expect_reference("causal.br.kpad.alibi.gqa4x2.d32.f32.kv8", "naive");
  expect_reference("causal.br.kpad.page16.mqa2.d32.bf16.kv8", "naive");
  expect_reference("full.bias.mha2.d16.f32.kv8.weights", "naive");
}

TEST(QuantizedCacheJit, DecodingPresetReadsInt8Rows) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const std::string decode = testing::preset_for("decode");
  expect_reference("causal.br.kpad.gqa4x2.d64.f32.kv8", decode);
  expect_reference("causal.br.kpad.gqa8x2.d128.bf16.kv8", decode);
  expect_reference("causal.br.kpad.page16.alibi.gqa4x2.d64.f32.kv8", decode);
  expect_reference("window9_3.br.kpad.page8.mqa2.d32.bf16.kv8", decode);
}

TEST(QuantizedCacheJit, EveryFormReadsInt8Rows) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  for (const char* form : {"online", "online_split", "fused", "materialized"}) {
    SCOPED_TRACE(form);
    expect_reference("causal.gqa4x2.d64.f32.kv8", testing::preset_for(form));
    expect_reference("full.kpad.page32.mha2.d32.bf16.kv8", testing::preset_for(form));
  }
}

}  // namespace
}  // namespace attnforge
