// bf16 dot products (the bf16_dots knob): q.k and P.V as vdpbf16ps over
// pairs, against the double reference on every mask kind, key padding, bias
// and ALiBi, MHA/GQA/MQA and odd sizes, with the knobs the pairs interact
// with; and the checks that keep the knob to bf16 specs on targets that have
// the instruction. The JIT cases run where the kernel target has it (Zen 4,
// Sapphire Rapids; compiled only where the host lacks it); the checks run
// everywhere.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "schedules/schedule_check.h"
#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/test_targets.h"

namespace attnforge {
namespace {

using schedules::Schedule;
using testing::Layout;

const char* const kZen4 =
    "x86-64-linux-avx-avx2-avx512-avx512_cannonlake-avx512_skylake-avx512_zen4-f16c-fma-sse41";
const char* const kSkylake = "x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41";

Schedule bf16_dots() {
  Schedule s = schedules::load_preset("online_avx512");
  s.bf16_dots = true;
  return s;
}

// The error check() gives, or "" when the schedule fits.
std::string misfit(const Schedule& s, const char* spec, const char* target) {
  auto error = schedules::check(s, AttentionSpec::parse(spec), Halide::Target(target));
  return error ? error->field() : "";
}

TEST(Bf16DotsCheck, OnlyBf16SpecsOnTargetsWithTheInstruction) {
  EXPECT_EQ(misfit(bf16_dots(), "causal.mha2.d64.bf16", kZen4), "");
  EXPECT_EQ(misfit(bf16_dots(), "causal.mha2.d64.f32", kZen4), "bf16_dots");
  EXPECT_EQ(misfit(bf16_dots(), "causal.mha2.d64.bf16", kSkylake), "bf16_dots");
  EXPECT_EQ(misfit(bf16_dots(), "causal.mha2.d64.bf16.kv8", kZen4), "bf16_dots");
  Schedule fused = schedules::load_preset("fused_avx512");
  fused.bf16_dots = true;  // ignored by the fused form: its canonical form drops it
  EXPECT_FALSE(schedules::canonical(fused).bf16_dots);
  Schedule narrow = bf16_dots();
  narrow.pv_vectors = 4;  // 64 query rows per P.V tile, but the tile has 64: fits
  EXPECT_EQ(misfit(narrow, "causal.mha2.d64.bf16", kZen4), "");
  narrow.register_vectors = 1;  // q.k tiles of 16 rows: 48 rows fit q.k, not P.V
  narrow.query_tile = 48;
  EXPECT_EQ(misfit(narrow, "causal.mha2.d64.bf16", kZen4), "pv_vectors");
  Schedule rows = bf16_dots();
  rows.pv_rows = 3;  // head-dim rows of the P.V tile must divide the head dim
  EXPECT_EQ(misfit(rows, "causal.mha2.d64.bf16", kZen4), "pv_rows");
}

// q * scale and the probabilities are rounded to bf16 by vcvtne2ps2bf16, one
// instruction per vector, where Halide 21 would emulate the rounding with
// integer operations (on every target with bf16 but Sapphire Rapids).
TEST(Bf16DotsAssembly, RoundsToBf16WithTheInstruction) {
  const Halide::Target target(kZen4);
  auto generator =
      Halide::Internal::GeneratorRegistry::create("attention", Halide::GeneratorContext(target));
  generator->set_generatorparam_value("spec", "causal.gqa4x2.d64.bf16");
  generator->set_generatorparam_value("schedule", "online_bf16_avx512");
  Halide::Pipeline pipeline = generator->build_pipeline();
  const std::string path = ::testing::TempDir() + "bf16_dots_rounding.s";
  pipeline.compile_to_assembly(path, pipeline.infer_arguments(), "attention",
                               target.with_feature(Halide::Target::NoRuntime));
  std::ifstream assembly(path);
  int roundings = 0, dots = 0;
  for (std::string line; std::getline(assembly, line);) {
    if (line.find("vcvtne2ps2bf16") != std::string::npos) ++roundings;
    if (line.find("vdpbf16ps") != std::string::npos) ++dots;
  }
  EXPECT_GE(roundings, 2);  // Q's copy and the probabilities
  EXPECT_GT(dots, 0);
}

bool target_has_bf16_dots() {
  return schedules::has_bf16_dots(testing::kernel_target());
}

// bf16 storage's tolerance (the output is rounded to bf16) holds: the
// rounding of q * scale and of P adds errors of the same size.
void expect_reference(const AttentionSpec& spec, const Schedule& schedule) {
  testing::expect_jit_matches_reference(
      spec, schedule.to_json().dump(),
      {{2, 7, 33}, {1, 1, 77}, {1, 100, 9}, {3, 65, 130}, {1, 1, 1}},
      {testing::Layout::bhld, testing::Layout::blhd}, 7);
}

TEST(Bf16DotsJit, MatchesTheReferenceOnEveryMaskAndOddSizes) {
  if (!target_has_bf16_dots()) GTEST_SKIP() << "the kernel target has no bf16 dot products";
  for (const char* text : {"full.mha2.d64.bf16", "causal.br.kpad.gqa4x2.d64.bf16",
                           "window9_3.br.alibi.mqa2.d32.bf16", "full.bias.gqa4x2.d128.bf16"}) {
    expect_reference(AttentionSpec::parse(text), bf16_dots());
  }
}

TEST(Bf16DotsJit, KnobsAroundThePairsKeepTheResult) {
  if (!target_has_bf16_dots()) GTEST_SKIP() << "the kernel target has no bf16 dot products";
  const AttentionSpec spec = AttentionSpec::parse("causal.br.kpad.gqa4x2.d64.bf16");
  Schedule splits = bf16_dots();  // key splits merged, rows of a KV group together
  splits.kv_splits = 2;
  splits.parallel.push_back(schedules::ParallelLoop::kv_splits);
  splits.group_heads = true;
  Schedule tiles = bf16_dots();  // a P.V tile of its own, Q pairs at root, odd blocks
  tiles.pv_rows = 2;
  tiles.pv_vectors = 1;
  tiles.q_copy_at = schedules::StoreLevel::root;
  tiles.key_block = 48;
  tiles.unroll = 2;
  tiles.query_tile = 32;
  for (const Schedule& s : {splits, tiles}) expect_reference(spec, s);
}

}  // namespace
}  // namespace attnforge
