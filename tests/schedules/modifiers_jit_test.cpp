// The logit modifiers on every x86 form, JIT-compiled through the Generator,
// against the double reference: softcapped logits, small and saturated, with
// every kind of additive term; and a window given per call, one kernel over
// many sizes, equal to the kernels with the window compiled in.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseOptions;
using testing::CaseShape;
using testing::Comparison;
using testing::expect_jit_matches_reference;
using testing::Layout;

using testing::every_x86_form;
using testing::kernel_target;
using testing::kernel_target_has_presets;
using testing::kernels_run_here;
using testing::preset_for;

class SoftcapJit : public ::testing::TestWithParam<const char*> {};

TEST_P(SoftcapJit, EveryFormMatchesTheReference) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const AttentionSpec spec = AttentionSpec::parse(GetParam());
  for (const std::string& schedule : every_x86_form(spec)) {
    expect_jit_matches_reference(spec, schedule, {{2, 7, 33}, {1, 1, 77}, {3, 65, 130}, {1, 1, 1}},
                                 {Layout::bhld, Layout::blhd}, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, SoftcapJit,
                         ::testing::Values("causal.softcap30.mha2.d64.f32",
                                           "full.kpad.alibi.softcap5.gqa4x2.d64.f16",
                                           "window9_3.br.bias.softcap2p5.mqa2.d32.f32",
                                           "causal.br.kpad.softcap50.gqa4x2.d64.bf16"));

// Logits around +-1e4 against a cap of 30: most saturate at +-30 and their
// weights tie, which only a cap applied before the row maximum gets right.
TEST(SoftcapJit, SaturatedLogitsMatchTheReference) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const AttentionSpec spec = AttentionSpec::parse("causal.br.softcap30.mha2.d64.f32");
  CaseOptions large;
  large.input_magnitude = 175.0;  // D 64, scale 1/8: logits reach about 1e4
  for (const std::string& schedule : every_x86_form(spec)) {
    JitAttention kernel(spec, kernel_target(), {{"schedule", schedule}});
    if (!kernels_run_here()) continue;
    AttentionCase c(spec, {2, 37, 70}, large);
    kernel.run(c.arguments());
    const Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << schedule << ": " << result.first_failure;
  }
}

// Runs one kernel of `spec` (a window given per call) over `windows` and
// each shape; every output must match the reference for that window.
void expect_every_window_matches(const AttentionSpec& spec, const std::string& schedule,
                                 const std::vector<std::pair<int, int>>& windows,
                                 const std::vector<CaseShape>& shapes) {
  JitAttention kernel(spec, kernel_target(), {{"schedule", schedule}});
  if (!kernels_run_here()) return;
  for (auto [left, right] : windows) {
    for (CaseShape shape : shapes) {
      AttentionCase c(spec, shape, {.seed = 5});
      c.set_window(left, right);
      kernel.run(c.arguments());
      const Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << spec.to_string() << " " << schedule << " window (" << left << ", "
                             << right << ") Lq" << shape.q_len << " Lk" << shape.kv_len << ": "
                             << result.first_failure;
    }
  }
}

class RunTimeWindowJit : public ::testing::TestWithParam<const char*> {};

TEST_P(RunTimeWindowJit, OneKernelMatchesTheReferenceForEveryWindow) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const AttentionSpec spec = AttentionSpec::parse(GetParam());
  // No key but the diagonal, odd sizes, wider than a key block, and wider than every sequence.
  const std::vector<std::pair<int, int>> windows = {{0, 0}, {7, 3}, {70, 0}, {1000, 1000}};
  for (const std::string& schedule : every_x86_form(spec)) {
    expect_every_window_matches(spec, schedule, windows,
                                {{2, 7, 33}, {1, 1, 77}, {3, 130, 130}, {1, 100, 9}});
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, RunTimeWindowJit,
                         ::testing::Values("window.mha2.d64.f32", "window.br.kpad.gqa4x2.d64.f32",
                                           "window.alibi.softcap20.mqa2.d32.f16",
                                           "window.br.mha2.d64.bf16"));

// The same inputs through window256_0 and through `window` given (256, 0):
// the same arithmetic, so the same outputs.
TEST(RunTimeWindowJit, EqualsTheCompiledWindow) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const AttentionSpec compiled = AttentionSpec::parse("window256_0.br.gqa4x2.d64.f32");
  const AttentionSpec given = AttentionSpec::parse("window.br.gqa4x2.d64.f32");
  for (const char* form : {"online", "fused"}) {
    const std::string schedule = preset_for(form);
    JitAttention compiled_kernel(compiled, kernel_target(), {{"schedule", schedule}});
    JitAttention given_kernel(given, kernel_target(), {{"schedule", schedule}});
    if (!kernels_run_here()) continue;
    AttentionCase a(compiled, {1, 300, 700}, {.seed = 9});
    AttentionCase b(given, {1, 300, 700}, {.seed = 9});
    b.set_window(256, 0);
    compiled_kernel.run(a.arguments());
    given_kernel.run(b.arguments());
    const std::vector<double> out_a = a.output(), out_b = b.output();
    ASSERT_EQ(out_a.size(), out_b.size());
    double largest = 0.0;
    for (size_t n = 0; n < out_a.size(); ++n) {
      largest = std::max(largest, std::abs(out_a[n] - out_b[n]));
    }
    EXPECT_LE(largest, 1e-6) << form;
    EXPECT_TRUE(b.compare().ok) << form;
  }
}

}  // namespace
}  // namespace attnforge
