// 8-bit KV caches against the reference on the dequantized cache: kv8 (int8
// rows with a scale per row) and kvfp8 (e4m3 codes with a scale per KV head),
// contiguous and paged, under the naive schedule and every x86 form's preset,
// with masks, GQA/MQA, ALiBi, f32 and bf16 queries; and every e4m3 code as
// the kernels read it.
#include <Halide.h>
#include <gtest/gtest.h>

#include <cmath>

#include "algorithm/quantized_cache.h"
#include "tests/reference/kv_quantizers.h"
#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

// Each spec with `.<cache>` (and `tail`) appended: kv8 and kvfp8 alike.
void expect_reference(const std::string& spec_text, const std::string& schedule,
                      const std::string& tail = "") {
  for (const char* cache : {"kv8", "kvfp8"}) {
    const std::string text = spec_text + "." + cache + tail;
    SCOPED_TRACE(text);
    testing::expect_cache_reads_match_reference(text.c_str(), schedule, 31);
  }
}

TEST(QuantizedCacheJit, NaiveReadsEightBitCaches) {
  expect_reference("causal.br.kpad.alibi.gqa4x2.d32.f32", "naive");
  expect_reference("causal.br.kpad.page16.mqa2.d32.bf16", "naive");
  expect_reference("full.bias.mha2.d16.f16", "naive", ".weights");
}

TEST(QuantizedCacheJit, DecodingPresetReadsEightBitCaches) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const std::string decode = testing::preset_for("decode");
  expect_reference("causal.br.kpad.gqa4x2.d64.f32", decode);
  expect_reference("causal.br.kpad.gqa8x2.d128.bf16", decode);
  expect_reference("causal.br.kpad.page16.alibi.gqa4x2.d64.f32", decode);
  expect_reference("window9_3.br.kpad.page8.mqa2.d32.bf16", decode);
}

TEST(QuantizedCacheJit, EveryFormReadsEightBitCaches) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  for (const char* form : {"online", "online_split", "fused", "materialized"}) {
    SCOPED_TRACE(form);
    expect_reference("causal.gqa4x2.d64.f32", testing::preset_for(form));
    expect_reference("full.kpad.page32.mha2.d32.bf16", testing::preset_for(form));
  }
}

// All 256 codes, normal, subnormal, zeros and NaN (read as +-480), through e4m3_levels
// vectorized on the host (an f16-to-f32 conversion where it has one).
TEST(QuantizedCacheJit, EveryE4m3CodeReadsAsItsDefinition) {
  Halide::Buffer<uint8_t> codes(256, 1, 1, 1);
  for (int code = 0; code < 256; ++code) codes(code, 0, 0, 0) = static_cast<uint8_t>(code);
  Halide::Func levels = e4m3_levels(Halide::Func(codes), "levels");
  Halide::Func read("read");
  Halide::Var d("d");
  read(d) = levels(d, 0, 0, 0) * kE4m3LevelUnit;
  read.vectorize(d, 16);
  Halide::Buffer<float> values = read.realize({256});
  for (int code = 0; code < 256; ++code) {
    const double expected = reference::e4m3_value(code);
    if (std::isnan(expected)) {
      EXPECT_EQ(values(code), e4m3_value(code)) << "a NaN code reads as +-480";
    } else {
      EXPECT_EQ(values(code), expected) << "code " << code;
      EXPECT_EQ(std::signbit(values(code)), code >= 0x80) << "code " << code;
    }
  }
}

}  // namespace
}  // namespace attnforge
