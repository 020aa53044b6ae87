// Numerical robustness of every form under its x86 preset (and the online
// form split over keys), against the double reference: logits around +-1e4,
// -inf and huge finite bias values, f16 inputs near the top of its range,
// rows with no visible key (zeros), and a NaN in one query row, which stays
// in that row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "tests/support/attention_case.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseOptions;
using testing::CaseShape;
using testing::Comparison;

using testing::kernel_target;
using testing::kernel_target_has_presets;
using testing::kernels_run_here;
using testing::preset_for;

// The kernel target's preset of every form, and the online form split four ways.
std::vector<std::pair<std::string, std::string>> schedules_to_test() {
  schedules::Schedule split = schedules::load_preset(preset_for("online"));
  split.kv_splits = 4;
  split.parallel.push_back(schedules::ParallelLoop::kv_splits);
  return {{"online", preset_for("online")},
          {"fused", preset_for("fused")},
          {"materialized", preset_for("materialized")},
          {"online split", split.to_json().dump()}};
}

// Runs `prepare`d cases of `spec` through every form and compares.
void expect_every_form_matches(const std::string& spec_text, CaseShape shape, CaseOptions options,
                               const std::function<void(AttentionCase&)>& prepare = {}) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  for (const auto& [form, schedule] : schedules_to_test()) {
    JitAttention kernel(spec, kernel_target(), {{"schedule", schedule}});
    if (!kernels_run_here()) continue;
    AttentionCase c(spec, shape, options);
    if (prepare) prepare(c);
    kernel.run(c.arguments());
    Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << form << " " << spec_text << ": " << result.first_failure;
  }
}

TEST(Numerics, LogitsAroundPlusMinus1e4) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  CaseOptions large;
  large.input_magnitude = 175.0;  // D 64, scale 1/8: logits reach about 1e4
  expect_every_form_matches("causal.br.mha2.d64.f32", {2, 37, 70}, large);
}

TEST(Numerics, InfiniteAndHugeFiniteBias) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const double inf = std::numeric_limits<double>::infinity();
  expect_every_form_matches("full.bias.mha2.d32.f32", {1, 9, 40}, {}, [&](AttentionCase& c) {
    for (int j = 0; j < 40; ++j) c.set_bias(0, 0, 2, j, -inf);  // a row with no key: zeros
    for (int j = 0; j < 40; j += 3) c.set_bias(0, 1, 4, j, -inf);
    c.set_bias(0, 1, 5, 7, -3e38);  // huge finite: as good as masked
    c.set_bias(0, 0, 6, 11, 1e4);   // dominates its row
    c.set_bias(0, 1, 8, 0, -1e4);
  });
}

TEST(Numerics, F16InputsNearTheTopOfItsRange) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  CaseOptions near_max;
  near_max.input_magnitude = 6e4;  // f16 max is 65504; the logits are f32
  expect_every_form_matches("causal.mha2.d32.f16", {1, 20, 20}, near_max);
}

TEST(Numerics, RowsWithNoKeyAreZero) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  CaseOptions lengths;
  lengths.key_lengths = {0, 5, 0};
  expect_every_form_matches("causal.br.kpad.mha2.d32.f32", {3, 6, 30}, lengths);
}

// A NaN in a query row makes every logit of that row NaN. That row's output
// is NaN or zero (a form may take a NaN logit as masked); every other row is
// exact. The reference takes NaN logits as masked, so it expects zeros there.
TEST(Numerics, NaNInOneQueryRowStaysInThatRow) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const AttentionSpec spec = AttentionSpec::parse("full.gqa4x2.d32.f32");
  const int B = 2, H = 4, Lq = 11, Lk = 29, D = 32, nan_b = 1, nan_h = 3, nan_i = 5;
  for (const auto& [form, schedule] : schedules_to_test()) {
    JitAttention kernel(spec, kernel_target(), {{"schedule", schedule}});
    if (!kernels_run_here()) continue;
    AttentionCase c(spec, {B, Lq, Lk});
    c.set_query(nan_b, nan_h, nan_i, 7, std::numeric_limits<double>::quiet_NaN());
    kernel.run(c.arguments());
    const std::vector<double> out = c.output(), expected = c.expected_output();
    int wrong = 0;
    for (size_t n = 0; n < out.size(); ++n) {
      const size_t row = n / D;
      const bool nan_row = row == (static_cast<size_t>(nan_b) * H + nan_h) * Lq + nan_i;
      const bool ok = nan_row
                          ? std::isnan(out[n]) || out[n] == 0.0
                          : std::fabs(out[n] - expected[n]) <= 1e-4 + 1e-4 * std::fabs(expected[n]);
      if (!ok && wrong++ == 0) {
        ADD_FAILURE() << form << ": out[" << n << "] = " << out[n] << ", expected "
                      << (nan_row ? "NaN or 0" : std::to_string(expected[n]));
      }
    }
  }
}

}  // namespace
}  // namespace attnforge
