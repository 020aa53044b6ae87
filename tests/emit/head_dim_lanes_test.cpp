// Head dims that are not a multiple of a target's f32 lanes still get fast
// kernels from emit: a tiled form refuses them (its vectors would run past a
// K, V or output row), so the plan takes the next preset that fits, one of 8
// lanes on AVX-512 for d40 and d72, the unfused form below 8. Every planned
// schedule fits its target, and computes the reference on the kernel target.
#include <gtest/gtest.h>

#include <string>

#include "autotune/temp_dir.h"
#include "emit/emit_target.h"
#include "emit/kernel_plan.h"
#include "schedules/schedule_check.h"
#include "schedules/schedule_choice.h"
#include "tests/support/jit_reference.h"
#include "tests/support/test_targets.h"

namespace attnforge::emit {
namespace {

// d40 and d72: whole 8-lane vectors, not 16-lane ones; d20: neither.
const char* const kSpecs[] = {"causal.br.kpad.gqa4x2.d40.f32", "window9_3.alibi.mha2.d72.bf16",
                              "full.mha2.d20.f32"};

KernelPlan plan_for(const Halide::Target& target) {
  autotune::TempDir dir;
  autotune::Database empty(dir.path() / "tuning.jsonl");
  std::vector<AttentionSpec> specs;
  for (const char* text : kSpecs) specs.push_back(AttentionSpec::parse(text));
  return plan_kernels(empty, parse_emit_targets(target.to_string()), specs);
}

class HeadDimLanes : public testing::EachIsa {};

TEST_P(HeadDimLanes, EveryPlannedKernelIsAPresetThatFitsTheTarget) {
  const Halide::Target target = GetParam();
  const KernelPlan plan = plan_for(target);
  EXPECT_TRUE(plan.skipped.empty()) << plan.skipped.front();
  ASSERT_EQ(plan.kernels.size(), 2 * std::size(kSpecs));  // generic and short queries
  for (const PlannedKernel& kernel : plan.kernels) {
    SCOPED_TRACE(kernel.function + " " + kernel.schedule);
    ASSERT_NE(kernel.schedule, "naive");
    const schedules::Schedule schedule = schedules::resolve_schedule(kernel.schedule);
    EXPECT_FALSE(schedules::check(schedule, kernel.spec, target).has_value());
    if (kernel.spec.head_dim % 8 == 0 && kernel.bucket == "generic") {
      // A tiled form at 8 lanes, not the unfused one.
      EXPECT_EQ(schedule.vector_width, 8);
      EXPECT_NE(schedule.form, schedules::Form::materialized);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, HeadDimLanes, testing::each_isa(), testing::isa_name);

TEST(HeadDimLanesJit, EveryPlannedKernelMatchesTheReference) {
  for (const PlannedKernel& kernel : plan_for(testing::kernel_target()).kernels) {
    SCOPED_TRACE(kernel.function + " " + kernel.schedule);
    testing::expect_jit_matches_reference(kernel.spec, kernel.schedule,
                                          {{2, 7, 33}, {1, 1, 77}, {3, 65, 130}, {1, 1, 1}},
                                          {testing::Layout::bhld, testing::Layout::blhd}, 29);
  }
}

}  // namespace
}  // namespace attnforge::emit
