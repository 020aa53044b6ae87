// 40 schedules drawn from the kernel target's x86 space, over a few specs, each
// JIT-compiled and checked against the reference on sizes that are not
// multiples of any tile.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "schedules/space.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"
#include "tests/support/test_targets.h"

namespace attnforge {
namespace {

class SampledSchedules : public ::testing::TestWithParam<const char*> {};

TEST_P(SampledSchedules, CompileAndMatchReference) {
  constexpr int kSamples = 10;  // per spec; four specs make 40
  AttentionSpec spec = AttentionSpec::parse(GetParam());
  const Halide::Target target = testing::kernel_target();
  schedules::ScheduleSpace space(spec, target);
  std::mt19937 rng(2024);
  for (int n = 0; n < kSamples; ++n) {
    schedules::Schedule schedule = space.sample(rng);
    std::string json = schedule.to_json().dump();
    JitAttention kernel(spec, target, {{"schedule", json}});
    if (!testing::kernels_run_here()) continue;
    testing::AttentionCase c(spec, {2, 37, 101}, {.seed = static_cast<uint32_t>(n)});
    kernel.run(c.arguments());
    testing::Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << json << ": " << result.first_failure;
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, SampledSchedules,
                         ::testing::Values("full.mha2.d64.f32", "causal.gqa4x2.d64.f32",
                                           "window20_5.br.kpad.mha2.d32.f32",
                                           "causal.br.alibi.mqa2.d64.f16"),
                         [](const auto& info) { return testing::test_name_of(info.param); });

}  // namespace
}  // namespace attnforge
