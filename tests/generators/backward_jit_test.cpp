// The backward Generator (naive schedule) against the double reference's
// gradients: every mask, key padding with a row that sees no key, ALiBi,
// bias, softcap, GQA/MQA, f32/f16/bf16, odd sizes, L = 1 and Lq != Lk, in
// both layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "generators/jit_attention.h"
#include "generators/jit_attention_backward.h"
#include "tests/support/backward_case.h"
#include "tests/support/test_targets.h"

namespace attnforge::testing {
namespace {

void expect_backward_matches_reference(const std::string& spec_text,
                                       std::initializer_list<CaseShape> shapes) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  JitAttentionBackward kernel(spec, kernel_target());
  if (!kernels_run_here()) return;
  for (CaseShape shape : shapes) {
    for (Layout layout : {Layout::bhld, Layout::blhd}) {
      BackwardCase c(spec, shape, {.layout = layout, .seed = 5});
      kernel.run(c.arguments());
      const Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << spec_text << " B" << shape.batch << " Lq" << shape.q_len << " Lk"
                             << shape.kv_len << ": " << result.first_failure << " (max error "
                             << result.max_error << ")";
    }
  }
}

constexpr std::initializer_list<CaseShape> kOddShapes = {
    {1, 1, 1}, {2, 7, 33}, {3, 19, 12}, {1, 1, 40}};

TEST(BackwardJit, MasksMatchTheReference) {
  for (const char* spec : {"full.mha2.d32.f32", "causal.mha2.d32.f32", "causal.br.mha2.d32.f32",
                           "window5_2.mha2.d16.f32", "causal.br.kpad.mha2.d32.f32"}) {
    expect_backward_matches_reference(spec, kOddShapes);
  }
}

TEST(BackwardJit, GroupedHeadsSumTheirKeyGradients) {
  for (const char* spec : {"causal.gqa8x2.d32.f32", "full.kpad.mqa4.d16.f32"}) {
    expect_backward_matches_reference(spec, kOddShapes);
  }
}

TEST(BackwardJit, AdditiveTermsAndSoftcapMatchTheReference) {
  for (const char* spec : {"causal.alibi.gqa4x2.d16.f32", "full.bias.mha2.d16.f32",
                           "causal.br.softcap5.gqa4x2.d32.f32"}) {
    expect_backward_matches_reference(spec, kOddShapes);
  }
}

TEST(BackwardJit, HalfPrecisionStorageMatchesTheReference) {
  for (const char* spec : {"causal.gqa4x2.d32.f16", "causal.br.kpad.gqa4x2.d32.bf16"}) {
    expect_backward_matches_reference(spec, kOddShapes);
  }
}

TEST(BackwardJit, AWindowGivenPerCallMatchesTheReference) {
  expect_backward_matches_reference("window.mha2.d16.f32", kOddShapes);
}

// Training's path: a forward kernel's out and lse (.lse), then the backward.
TEST(BackwardJit, TheForwardKernelsOutAndLseFeedTheBackward) {
  for (const char* text : {"causal.br.kpad.gqa4x2.d32.f32", "full.softcap20.mha2.d16.bf16"}) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    AttentionSpec forward_spec = spec;
    forward_spec.return_lse = true;
    JitAttention forward(forward_spec, kernel_target(), {{"schedule", "naive"}});
    JitAttentionBackward backward(spec, kernel_target());
    if (!kernels_run_here()) continue;
    for (CaseShape shape : kOddShapes) {
      BackwardCase c(spec, shape, {.seed = 9});
      forward.run(c.forward_arguments());
      c.take_forward_outputs();
      backward.run(c.arguments());
      const Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << text << " B" << shape.batch << " Lq" << shape.q_len << " Lk"
                             << shape.kv_len << ": " << result.first_failure;
    }
  }
}

TEST(BackwardJit, SpecsWithoutABackwardAreNamed) {
  for (auto [spec, field] : {std::pair{"causal.br.kpad.page16.gqa8x2.d64.f32", "page"},
                             std::pair{"causal.br.gqa8x2.d64.bf16.kv8", "kv_storage"},
                             std::pair{"full.mha2.d32.f32.weights", "weights"}}) {
    try {
      JitAttentionBackward kernel(AttentionSpec::parse(spec), kernel_target());
      ADD_FAILURE() << spec << " compiled";
    } catch (const SpecError& error) {
      EXPECT_EQ(error.field(), field) << error.what();
    }
  }
}

}  // namespace
}  // namespace attnforge::testing
