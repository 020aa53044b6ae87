// Head dims that are not a multiple of a target's f32 lanes still get fast
// kernels from emit: a tiled form refuses them (its vectors would run past a
// K, V or output row), so the plan takes the next preset that fits: one of 8
// lanes on AVX-512 for d40 and d72, the unfused form for a head dim that is
// not a multiple of 8 (d20). Every planned schedule fits its target, and
// computes the reference on the kernel target.
#include <gtest/gtest.h>

#include <map>
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
  // Generic and short queries, and one-row kernels where the decoder's tiles
  // hold more than a query's rows (d40's groups of 2 heads, d72's MHA).
  ASSERT_EQ(plan.kernels.size(), 2 * std::size(kSpecs) + 2);
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

// On CUDA the key-split preset needs a head dim of whole 16-thread rows; d40
// decodes with the generic preset instead of the naive schedule.
TEST(HeadDimLanesCuda, ShortQueriesFallBackToTheGenericPreset) {
  autotune::TempDir dir;
  const autotune::Database empty(dir.path() / "tuning.jsonl");
  const KernelPlan plan = plan_kernels(empty, parse_emit_targets("cuda"),
                                       {AttentionSpec::parse("causal.br.kpad.gqa4x2.d40.f32"),
                                        AttentionSpec::parse("causal.br.kpad.gqa4x2.d64.f32")});
  std::map<std::string, std::string> schedules;  // by function
  for (const PlannedKernel& kernel : plan.kernels) schedules[kernel.function] = kernel.schedule;
  EXPECT_EQ(schedules["attnforge_cuda80_causal_br_kpad_gqa4x2_d40_f32_generic_q16"], "online_cuda");
  EXPECT_EQ(schedules["attnforge_cuda80_causal_br_kpad_gqa4x2_d64_f32_generic_q16"],
            "online_split_cuda");
}

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
