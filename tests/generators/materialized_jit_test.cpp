// The materialized form with the naive schedule, JIT-compiled through the
// attention Generator, against the double-precision reference: every mask
// kind, MHA/GQA/MQA, cross-attention, odd lengths, D 32/64/128, f32/f16/bf16,
// both memory layouts, fully masked rows, huge logits, run-time scale.
#include <gtest/gtest.h>

#include <limits>

#include "generators/jit_attention.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseOptions;
using testing::CaseShape;
using testing::Comparison;
using testing::Layout;

JitAttention compile(const std::string& spec) {
  return JitAttention(AttentionSpec::parse(spec), Halide::get_host_target());
}

void expect_matches(const JitAttention& kernel, CaseShape shape, CaseOptions options = {}) {
  AttentionCase c(kernel.spec(), shape, options);
  kernel.run(c.arguments());
  Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << kernel.spec().to_string() << " B" << shape.batch << " Lq" << shape.q_len
                         << " Lk" << shape.kv_len << " layout "
                         << (options.layout == Layout::bhld ? "bhld" : "blhd") << ": "
                         << result.first_failure << " (max error " << result.max_error << ")";
}

// Odd sizes: Lq != Lk both ways, Lq = 1 (decoding), L = 1, and B = 3 so key
// padding gets a zero-length sequence.
const CaseShape kOddShapes[] = {{2, 7, 33}, {1, 1, 33}, {1, 33, 7}, {1, 1, 1}, {3, 5, 12}};

class MaterializedJit : public ::testing::TestWithParam<const char*> {};

TEST_P(MaterializedJit, MatchesReferenceOnOddShapesInBothLayouts) {
  JitAttention kernel = compile(GetParam());
  for (CaseShape shape : kOddShapes) {
    for (Layout layout : {Layout::bhld, Layout::blhd}) {
      expect_matches(kernel, shape, {.layout = layout, .seed = 7});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Specs, MaterializedJit,
    ::testing::Values(
        // every mask kind, MHA, D 32
        "full.mha2.d32.f32", "causal.mha2.d32.f32", "causal.br.mha2.d32.f32",
        "window4_2.mha2.d32.f32", "window3_0.br.mha2.d32.f32", "full.kpad.mha2.d32.f32",
        "full.bias.mha2.d32.f32", "full.alibi.mha2.d32.f32", "causal.br.alibi.mha2.d32.f32",
        "causal.br.kpad.alibi.mha2.d32.f32", "window5_1.kpad.bias.mha2.d32.f32.weights",
        // head layouts and head dims
        "full.gqa12x4.d64.f32", "causal.mqa8.d64.f32", "causal.gqa4x2.d128.f32",
        // storage types
        "causal.gqa4x2.d64.f16", "causal.gqa4x2.d64.bf16", "full.bias.mha2.d32.f16.weights",
        "window8_8.br.kpad.alibi.mqa4.d32.bf16.weights"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      return testing::test_name_of(info.param);
    });

TEST(MaterializedJitLong, MatchesReferenceAtLength1000) {
  for (const char* spec : {"full.mha1.d64.f32", "causal.br.mha1.d64.f32"}) {
    JitAttention kernel = compile(spec);
    expect_matches(kernel, {1, 1000, 1000});
    expect_matches(kernel, {1, 3, 1000}, {.layout = Layout::blhd});
  }
}

TEST(MaterializedJitMasks, BroadcastBiasWithStrideZero) {
  JitAttention kernel = compile("causal.bias.gqa4x2.d32.f32.weights");
  expect_matches(kernel, {2, 9, 17}, {.broadcast_bias = true});
}

TEST(MaterializedJitMasks, RowsWithNoVisibleKeyAreZeroNotNaN) {
  JitAttention kernel = compile("full.kpad.bias.mha2.d32.f32.weights");
  // Batch 0 has no valid key; batch 1 row 2 has -inf bias on every key and
  // row 3 has -inf on all but one key.
  AttentionCase c(kernel.spec(), {2, 4, 6}, {.key_lengths = {0, 6}});
  const double inf = std::numeric_limits<double>::infinity();
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 6; ++j) {
      c.set_bias(1, h, 2, j, -inf);
      if (j != 4) c.set_bias(1, h, 3, j, -inf);
    }
  }
  kernel.run(c.arguments());
  Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << result.first_failure;
}

TEST(MaterializedJitNumerics, LogitsOfMagnitude1e4DoNotOverflow) {
  for (const char* spec : {"full.mha2.d64.f32", "causal.mha2.d64.f16"}) {
    JitAttention kernel = compile(spec);
    // q, k in [-175, 175] with D = 64 and scale 1/8 gives logits around +-1e4.
    AttentionCase c(kernel.spec(), {1, 17, 40}, {.input_magnitude = 175.0});
    kernel.run(c.arguments());
    Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << spec << ": " << result.first_failure;
  }
}

TEST(MaterializedJitNumerics, ScaleIsARunTimeValue) {
  JitAttention kernel = compile("causal.mha2.d32.f32");
  for (double scale : {0.0, 0.3, 2.0}) {
    AttentionCase c(kernel.spec(), {1, 5, 9});
    c.set_scale(scale);
    kernel.run(c.arguments());
    Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << "scale " << scale << ": " << result.first_failure;
  }
}

TEST(MaterializedJitShapes, WrongHeadDimIsAnErrorNotGarbage) {
  JitAttention kernel = compile("full.mha2.d32.f32");
  AttentionCase wrong(AttentionSpec::parse("full.mha2.d16.f32"), {1, 4, 4});
  EXPECT_THROW(kernel.run(wrong.arguments()), KernelError);
}

TEST(MaterializedJitShapes, WrongHeadCountIsAnError) {
  JitAttention kernel = compile("full.gqa4x2.d32.f32");
  AttentionCase wrong(AttentionSpec::parse("full.mha4.d32.f32"), {1, 4, 4});
  EXPECT_THROW(kernel.run(wrong.arguments()), KernelError);
}

TEST(MaterializedJitShapes, MissingArgumentIsAnError) {
  JitAttention kernel = compile("full.kpad.mha2.d32.f32");
  AttentionCase c(kernel.spec(), {1, 4, 4});
  c.arguments().key_lengths = nullptr;
  EXPECT_THROW(kernel.run(c.arguments()), SpecError);
}

}  // namespace
}  // namespace attnforge
