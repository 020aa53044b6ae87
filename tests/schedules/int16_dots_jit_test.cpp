// int16 dot products (the int16_dots knob): q.k of an int8 K cache as int16
// levels of q against K's levels, in int32. Against the double reference on
// the dequantized cache at f32 tolerance (the levels' rounding is within half
// a step of 1/32767 of a row's largest element), contiguous and paged, with
// masks, ALiBi, GQA/MQA, f32 and bf16 queries and odd sizes; the checks that
// keep the knob to int8 caches; and the instruction each ISA's kernel takes.
#include <Halide.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "schedules/presets.h"
#include "schedules/schedule_check.h"
#include "spec/attention_spec.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"
#include "tests/support/test_targets.h"

namespace attnforge {
namespace {

using schedules::Schedule;

Schedule int16_dots(const Halide::Target& target) {
  Schedule s = schedules::load_preset(testing::preset_for("decode", target));
  s.int16_dots = true;
  return s;
}

// The field check() names, or "" when the schedule fits.
std::string misfit(const Schedule& s, const char* spec) {
  auto error = schedules::check(s, AttentionSpec::parse(spec), testing::avx2_target());
  return error ? error->field() : "";
}

TEST(Int16DotsCheck, OnlyInt8CachesAlongTheHeadDim) {
  const Schedule s = int16_dots(testing::avx2_target());
  EXPECT_EQ(misfit(s, "causal.br.gqa4x2.d64.bf16.kv8"), "");
  EXPECT_EQ(misfit(s, "causal.br.gqa4x2.d64.bf16.kvfp8"), "int16_dots");
  EXPECT_EQ(misfit(s, "causal.br.gqa4x2.d64.f32"), "int16_dots");
  EXPECT_EQ(misfit(s, "causal.br.gqa4x2.d24.f32.kv8"), "int16_dots");  // not pairs of vectors
  Schedule across_queries = schedules::load_preset("online_avx2");
  across_queries.int16_dots = true;
  EXPECT_EQ(misfit(across_queries, "causal.br.gqa4x2.d64.f32.kv8"), "int16_dots");
  Schedule fused = schedules::load_preset("fused_avx2");
  fused.int16_dots = true;  // ignored by the fused form: its canonical form drops it
  EXPECT_FALSE(schedules::canonical(fused).int16_dots);
}

// The decoding preset with int16 dot products, grouped and one row per tile
// (an MHA decoder), and split over keys.
std::vector<std::string> schedules_to_check() {
  Schedule grouped = int16_dots(testing::kernel_target());
  Schedule rows = grouped;
  rows.group_heads = false;
  rows.query_tile = 1;
  rows.register_rows = 1;
  rows.pv_rows = 1;
  Schedule split = grouped;
  split.kv_splits = 2;
  split.parallel.push_back(schedules::ParallelLoop::kv_splits);
  return {grouped.to_json().dump(), rows.to_json().dump(), split.to_json().dump()};
}

TEST(Int16DotsJit, MatchesTheReferenceOnTheDequantizedCache) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  for (const std::string& schedule : schedules_to_check()) {
    for (const char* spec :
         {"causal.br.kpad.gqa4x2.d64.f32.kv8", "causal.br.kpad.gqa8x2.d128.bf16.kv8",
          "causal.br.kpad.page16.alibi.gqa4x2.d64.f32.kv8",
          "window9_3.br.kpad.page8.mqa2.d32.bf16.kv8", "full.bias.mha2.d32.f16.kv8"}) {
      SCOPED_TRACE(spec);
      testing::expect_cache_reads_match_reference(spec, schedule, 47);
    }
  }
}

class Int16Dots : public testing::EachIsa {};

// q.k is one int16 dot product per vector of head-dim pairs: vpdpwssd where
// the target has AVX512_VNNI (Zen 4), vpmaddwd on AVX2; K's int8 levels are
// widened to int16 from whole-vector loads (vpmovsxbw from memory).
TEST_P(Int16Dots, QkIsOneIntegerDotProductPerVector) {
  const Halide::Target& target = GetParam();
  const bool vnni = target.has_feature(Halide::Target::AVX512_Zen4);
  auto generator =
      Halide::Internal::GeneratorRegistry::create("attention", Halide::GeneratorContext(target));
  generator->set_generatorparam_value("spec", "causal.br.kpad.gqa32x8.d128.bf16.kv8");
  generator->set_generatorparam_value("schedule", int16_dots(target).to_json().dump());
  Halide::Pipeline pipeline = generator->build_pipeline();
  const std::string path = ::testing::TempDir() + "int16_dots_" + (vnni ? "avx512" : "avx2") + ".s";
  pipeline.compile_to_assembly(path, pipeline.infer_arguments(), "attention",
                               target.with_feature(Halide::Target::NoRuntime));
  std::ifstream assembly(path);
  int dots = 0, widening_loads = 0;
  for (std::string line; std::getline(assembly, line);) {
    if (line.find(vnni ? "vpdpwssd" : "vpmaddwd") != std::string::npos) ++dots;
    if (line.find("vpmovsxbw") != std::string::npos && line.find('(') != std::string::npos) {
      ++widening_loads;
    }
  }
  EXPECT_GT(dots, 0);
  EXPECT_GT(widening_loads, 0);
}

INSTANTIATE_TEST_SUITE_P(Isa, Int16Dots, testing::each_isa(), testing::isa_name);

}  // namespace
}  // namespace attnforge
