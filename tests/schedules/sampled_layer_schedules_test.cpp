// Layer schedules drawn from the kernel target's layer space (attention and projection
// knobs together), each JIT-compiled and checked against the reference on
// sizes that are not multiples of any tile.
#include <gtest/gtest.h>

#include "generators/jit_layer.h"
#include "schedules/space.h"
#include "tests/support/layer_case.h"
#include "tests/support/test_names.h"
#include "tests/support/test_targets.h"

namespace attnforge {
namespace {

class SampledLayerSchedules : public ::testing::TestWithParam<const char*> {};

TEST_P(SampledLayerSchedules, CompileAndMatchReference) {
  constexpr int kSamples = 4;
  const LayerSpec spec = LayerSpec::parse(GetParam());
  const Halide::Target target = testing::kernel_target();
  schedules::ScheduleSpace space(spec, target);
  std::mt19937 rng(77);
  for (int n = 0; n < kSamples; ++n) {
    const schedules::Schedule schedule = space.sample(rng);
    EXPECT_GT(schedule.projection_rows, 0);
    const std::string json = schedule.to_json().dump();
    JitLayer kernel(spec, target, {{"schedule", json}});
    if (!testing::kernels_run_here()) continue;
    const testing::CaseShape shape =
        spec.self_attention ? testing::CaseShape{2, 53, 53} : testing::CaseShape{2, 29, 71};
    testing::LayerCase c(spec, shape, n);
    kernel.run(c.arguments());
    testing::Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << json << ": " << result.first_failure;
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, SampledLayerSchedules,
                         ::testing::Values("self.dm64.causal.mha2.d32.f32",
                                           "cross.dm64.window9_3.br.kpad.gqa4x2.d16.f32"),
                         [](const auto& info) { return testing::test_name_of(info.param); });

}  // namespace
}  // namespace attnforge
