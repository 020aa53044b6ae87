// What a task of a cluster job reads: its shard from the Slurm or Kubernetes
// environment, the plan's jobs, and narrowed knobs; each mistake named.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "autotune/knob_values.h"
#include "autotune/shard_choice.h"
#include "autotune/temp_dir.h"
#include "autotune/tuning_plan.h"
#include "schedules/schedule.h"

namespace attnforge::autotune {
namespace {

Environment environment_of(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

void expect_shard(const ShardChoice& shard, int index, int count) {
  EXPECT_EQ(shard.index, index);
  EXPECT_EQ(shard.count, count);
}

void expect_error(const std::function<void()>& call, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one with '" << part << "'";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(ShardChoice, GivenOrFromSlurmOrKubernetes) {
  const Environment none = environment_of({});
  expect_shard(parse_shard("2/5", 0, none), 2, 5);
  // sbatch --array=1-3: tasks 1, 2, 3 are shards 0, 1, 2.
  expect_shard(parse_shard("auto", 0,
                           environment_of({{"SLURM_ARRAY_TASK_ID", "3"},
                                           {"SLURM_ARRAY_TASK_MIN", "1"},
                                           {"SLURM_ARRAY_TASK_MAX", "3"}})),
               2, 3);
  expect_shard(
      parse_shard("auto", 0,
                  environment_of({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "8"}})),
      4, 8);
  expect_shard(parse_shard("auto", 6, environment_of({{"JOB_COMPLETION_INDEX", "5"}})), 5, 6);
  expect_shard(
      parse_shard("auto", 0,
                  environment_of({{"JOB_COMPLETION_INDEX", "0"}, {"ATTNFORGE_SHARD_COUNT", "4"}})),
      0, 4);
}

TEST(ShardChoice, MistakesAreNamed) {
  expect_error([] { parse_shard("3/3", 0, environment_of({})); }, "--shard: '3/3'");
  expect_error([] { parse_shard("auto", 0, environment_of({})); }, "SLURM_ARRAY_TASK_ID");
  expect_error(
      [] {
        parse_shard("auto", 0, environment_of({{"JOB_COMPLETION_INDEX", "1"}}));
      },
      "--shard-count");
  expect_error(
      [] {
        parse_shard("auto", 0,
                    environment_of({{"SLURM_ARRAY_TASK_ID", "2"},
                                    {"SLURM_ARRAY_TASK_STEP", "2"},
                                    {"SLURM_ARRAY_TASK_COUNT", "4"}}));
      },
      "steps by 2");
  expect_error(
      [] {
        parse_shard("auto", 0, environment_of({{"SLURM_ARRAY_TASK_ID", "x"}}));
      },
      "SLURM_ARRAY_TASK_ID='x'");
  expect_error(
      [] {
        parse_shard("auto", 2, environment_of({{"JOB_COMPLETION_INDEX", "2"}}));
      },
      "task 2 of 2");
}

TEST(TuningPlan, ReadsJobsAndNamesABadLine) {
  TempDir dir;
  const auto path = dir.path() / "plan.txt";
  std::ofstream(path) << "# decoding\n"
                         "causal.br.gqa32x8.d128.f32 1,32,1,8192\n"
                         "\n"
                         "full.mha8.d64.f16 1,8,2048,2048 host-cuda  # on the GPU\n";
  const std::vector<PlannedJob> jobs = read_plan(path);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].spec, "causal.br.gqa32x8.d128.f32");
  EXPECT_EQ(jobs[0].shape, "1,32,1,8192");
  EXPECT_EQ(jobs[0].target, "host");
  EXPECT_EQ(jobs[1].target, "host-cuda");
  EXPECT_EQ(jobs[1].line, 4);
  std::ofstream(path) << "full.mha8.d64.f16\n";
  expect_error([&] { read_plan(path); }, "plan.txt:1");
  std::ofstream(path) << "# nothing\n";
  expect_error([&] { read_plan(path); }, "lists no job");
  expect_error([&] { read_plan(dir.path() / "missing.txt"); }, "cannot read");
}

TEST(KnobValues, NamesIntegersAndFlags) {
  auto [name, codes] = parse_knob_values("key_block=32,64");
  EXPECT_EQ(name, "key_block");
  EXPECT_EQ(codes, (std::vector<int>{32, 64}));
  EXPECT_EQ(parse_knob_values("dot_axis=head_dim").second,
            (std::vector<int>{static_cast<int>(schedules::DotAxis::head_dim)}));
  EXPECT_EQ(parse_knob_values("group_heads=true,false").second, (std::vector<int>{1, 0}));
  expect_error([] { parse_knob_values("key_block"); }, "name=value");
  expect_error([] { parse_knob_values("tile=4"); }, "tile");
  expect_error([] { parse_knob_values("key_block=big"); }, "key_block");
  expect_error([] { parse_knob_values("form=flash"); }, "'flash' is unknown");
  expect_error([] { parse_knob_values("parallel=heads"); }, "cannot be narrowed");
}

}  // namespace
}  // namespace attnforge::autotune
