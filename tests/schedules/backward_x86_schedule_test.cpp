// The x86 backward schedules (presets and knob values the search tries)
// against the double reference's gradients: every mask, GQA/MQA, softcap,
// half-precision storage, odd sizes, L = 1, Lq != Lk and lengths spanning
// several blocks with partial last ones, in both layouts. Misfit knobs are
// named.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "generators/jit_attention_backward.h"
#include "schedules/backward_schedule.h"
#include "schedules/schedule_check.h"
#include "tests/support/backward_case.h"
#include "tests/support/test_targets.h"

namespace attnforge::testing {
namespace {

using schedules::BackwardSchedule;

std::string host_preset() {
  return kernel_target().has_feature(Halide::Target::AVX512) ? "backward_avx512" : "backward_avx2";
}

constexpr std::initializer_list<CaseShape> kShapes = {{1, 1, 1},  {2, 7, 33},   {3, 19, 12},
                                                      {1, 1, 40}, {1, 130, 67}, {1, 67, 130}};

void expect_schedule_matches_reference(const std::string& spec_text, const std::string& schedule,
                                       std::initializer_list<CaseShape> shapes = kShapes) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  JitAttentionBackward kernel(spec, kernel_target(), {{"schedule", schedule}});
  if (!kernels_run_here()) return;
  for (CaseShape shape : shapes) {
    for (Layout layout : {Layout::bhld, Layout::blhd}) {
      BackwardCase c(spec, shape, {.layout = layout, .seed = 11});
      kernel.run(c.arguments());
      const Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << spec_text << " " << schedule << " B" << shape.batch << " Lq"
                             << shape.q_len << " Lk" << shape.kv_len << ": " << result.first_failure
                             << " (max error " << result.max_error << ")";
    }
  }
}

TEST(BackwardX86Schedule, MasksMatchTheReference) {
  for (const char* spec :
       {"full.mha2.d32.f32", "causal.mha2.d32.f32", "causal.br.mha2.d32.f32",
        "window5_2.mha2.d16.f32", "causal.br.kpad.mha2.d32.f32", "window.mha2.d16.f32"}) {
    expect_schedule_matches_reference(spec, host_preset());
  }
}

TEST(BackwardX86Schedule, GroupedHeadsAndAdditiveTermsMatchTheReference) {
  for (const char* spec :
       {"causal.gqa8x2.d32.f32", "full.kpad.mqa4.d16.f32", "causal.alibi.gqa4x2.d16.f32",
        "full.bias.mha2.d16.f32", "causal.br.softcap5.gqa4x2.d32.f32"}) {
    expect_schedule_matches_reference(spec, host_preset());
  }
}

// dBias (.dbias): a third pass writes the logits' gradient, every mask and
// heads, softcap (dBias is the logit's, not the score's), half precision.
TEST(BackwardX86Schedule, BiasGradientsMatchTheReference) {
  for (const char* spec :
       {"full.bias.mha2.d16.f32.dbias", "causal.br.kpad.bias.gqa4x2.d32.f32.dbias",
        "window5_2.bias.softcap5.mqa2.d16.f32.dbias", "causal.bias.gqa4x2.d32.f16.dbias"}) {
    expect_schedule_matches_reference(spec, host_preset());
    expect_schedule_matches_reference(spec, "naive", {{2, 7, 33}, {1, 1, 1}});
  }
}

TEST(BackwardX86Schedule, HalfPrecisionStorageMatchesTheReference) {
  for (const char* spec : {"causal.gqa4x2.d32.f16", "causal.br.kpad.gqa4x2.d64.bf16"}) {
    expect_schedule_matches_reference(spec, host_preset());
  }
}

// Other tiles than the preset's: blocks of 32 and 128, one-row and one-vector tiles.
TEST(BackwardX86Schedule, OtherTilesMatchTheReference) {
  const int lanes = kernel_target().has_feature(Halide::Target::AVX512) ? 16 : 8;
  for (BackwardSchedule s : {BackwardSchedule{32, 128, lanes, 1, 2, 1, 1},
                             BackwardSchedule{128, 32, lanes, 2, 2, 2, 1}}) {
    expect_schedule_matches_reference("causal.br.kpad.gqa4x2.d32.f32", s.to_json().dump(),
                                      {{1, 1, 1}, {2, 45, 150}, {1, 150, 45}});
  }
}

// bf16 dot products for q.k and dO.v (bf16 storage, AVX512_BF16): every
// mask, heads and odd sizes as above, within bf16's tolerance.
TEST(BackwardX86Schedule, Bf16DotProductsMatchTheReference) {
  const Halide::Target target = kernel_target();
  if (!schedules::has_bf16_dots(target)) {
    GTEST_SKIP() << target.to_string() << " has no bf16 dot products; "
                 << "Bf16DotProductsAreTheInstruction compiles them for Zen 4";
  }
  for (const char* spec :
       {"causal.br.kpad.gqa4x2.d64.bf16", "full.bias.mqa4.d32.bf16", "window5_2.mha2.d16.bf16",
        "causal.br.softcap5.gqa4x2.d32.bf16", "causal.br.bias.gqa4x2.d32.bf16.dbias"}) {
    expect_schedule_matches_reference(spec, "backward_bf16_avx512");
  }
}

TEST(BackwardX86Schedule, Bf16DotProductsAreTheInstruction) {
  const Halide::Target target = avx512_target();
  auto generator = Halide::Internal::GeneratorRegistry::create("attention_backward",
                                                               Halide::GeneratorContext(target));
  generator->set_generatorparam_value("spec", "causal.gqa4x2.d64.bf16");
  generator->set_generatorparam_value("schedule", "backward_bf16_avx512");
  Halide::Pipeline pipeline = generator->build_pipeline();
  const std::string path = ::testing::TempDir() + "backward_bf16_dots.s";
  pipeline.compile_to_assembly(path, pipeline.infer_arguments(), "attention_backward",
                               target.with_feature(Halide::Target::NoRuntime));
  std::ifstream assembly(path);
  int dots = 0;
  for (std::string line; std::getline(assembly, line);) {
    if (line.find("vdpbf16ps") != std::string::npos) ++dots;
  }
  // q.k and dO.v in each pass, 2 x 4 register tiles: 8 each, unrolled.
  EXPECT_GE(dots, 4 * 8);
}

TEST(BackwardX86Schedule, EveryPresetCompilesForEveryIsa) {
  for (const Halide::Target& target : lowering_targets()) {
    for (const std::string& preset : schedules::backward_preset_names()) {
      if (preset == "backward_rows_gpu") continue;  // backward_gpu_schedule_test
      const bool bf16 = preset == "backward_bf16_avx512";
      const bool fits = preset == "backward_avx2" || target.has_feature(Halide::Target::AVX512);
      try {
        JitAttentionBackward kernel(
            AttentionSpec::parse(bf16 ? "causal.gqa8x2.d64.bf16" : "causal.gqa8x2.d64.f32"), target,
            {{"schedule", preset}});
        EXPECT_TRUE(fits) << preset << " compiled for " << target.to_string();
      } catch (const schedules::ScheduleError& error) {
        EXPECT_FALSE(fits) << preset << ": " << error.what();
        EXPECT_EQ(error.field(), "vector_width");
      }
    }
  }
}

TEST(BackwardX86Schedule, MisfitKnobsAreNamed) {
  const AttentionSpec spec = AttentionSpec::parse("full.mha2.d32.f32");
  BackwardSchedule s = schedules::load_backward_preset("backward_avx2");
  auto field_of = [&](const BackwardSchedule& schedule) {
    auto misfit = schedules::check_backward(schedule, spec, avx2_target());
    return misfit ? misfit->field() : std::string("none");
  };
  EXPECT_EQ(field_of(s), "none");
  BackwardSchedule odd_block = s;
  odd_block.key_block = 40;
  EXPECT_EQ(field_of(odd_block), "key_block");
  BackwardSchedule wide = s;
  wide.vector_width = 16;
  EXPECT_EQ(field_of(wide), "vector_width");
  BackwardSchedule big = s;
  big.grad_vectors = 4;
  big.grad_rows = 4;
  EXPECT_EQ(field_of(big), "grad_rows");
  BackwardSchedule dots = s;
  dots.bf16_dots = 1;
  EXPECT_EQ(field_of(dots), "bf16_dots");  // f32 storage, and no AVX512_BF16
  EXPECT_THROW(schedules::resolve_backward_schedule("{\"key_blocks\": 64}"),
               schedules::ScheduleError);
  EXPECT_THROW(schedules::resolve_backward_schedule("backward_sse"), schedules::ScheduleError);
}

}  // namespace
}  // namespace attnforge::testing
