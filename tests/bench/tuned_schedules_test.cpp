// The benchmarks' tuned schedules: a database's winners of the target, and
// the one that runs a case (its own shape bucket's, else the spec's first).
#include "bench/tuned_schedules.h"

#include <gtest/gtest.h>

#include "autotune/database.h"
#include "autotune/temp_dir.h"
#include "tests/support/tuned_record.h"

namespace attnforge::bench {
namespace {

using autotune::Record;
using autotune::Status;

const char* const kTarget = "x86-64-linux-avx-avx2-fma";
const char* const kSpec = "full.mha8.d64.f32";

Record record(const std::string& bucket, int query_tile, double ms, Status status = Status::ok) {
  return tuned_record(kSpec, kTarget, bucket, query_tile, ms, status);
}

TEST(TunedSchedules, TheTargetsWinningSchedulesPerSpecAndBucket) {
  autotune::TempDir dir;
  const std::string path = (dir.path() / "tuning.jsonl").string();
  Record naive = record("b1.q512.k512", 0, 0.1);
  naive.schedule = "naive";  // faster, but not a schedule to run as "tuned"
  Record other_target = record("b1.q512.k512", 64, 0.2);
  other_target.target = "x86-64-linux-avx-avx2-avx512-fma";
  Record preset = record("b1.q2048.k2048", 32, 3.0);
  preset.strategy = "preset:online_avx2";
  autotune::Database(path).append(std::vector<Record>{
      naive, other_target, record("b1.q512.k512", 16, 1.0),
      record("b1.q512.k512", 8, 0.5, Status::wrong), record("b1.q512.k512", 24, 2.0), preset,
      record("b1.q2048.k2048", 48, 4.0)});
  const TunedSchedules tuned = tuned_schedules(path, kTarget);
  ASSERT_EQ(tuned.size(), 1u);
  const auto& buckets = tuned.at(kSpec);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(buckets.at("b1.q512.k512"))["query_tile"], 16);
  EXPECT_EQ(nlohmann::json::parse(buckets.at("b1.q2048.k2048"))["query_tile"], 32);
  EXPECT_TRUE(tuned_schedules(path, "arm-64-linux").empty());
}

TEST(TunedSchedules, ACaseRunsItsOwnBucketsScheduleElseTheSpecsFirst) {
  const TunedSchedules tuned = {{kSpec, {{"b1.q2048.k2048", "large"}, {"b1.q512.k512", "small"}}},
                                {"causal.mha8.d64.f32", {}}};
  EXPECT_EQ(tuned_schedule_for(tuned, kSpec, 1, 300, 400), "small");  // bucketed: 512
  EXPECT_EQ(tuned_schedule_for(tuned, kSpec, 1, 2048, 2048), "large");
  // No schedule of its bucket: the first bucket's ("b1.q2048..." sorts first).
  EXPECT_EQ(tuned_schedule_for(tuned, kSpec, 4, 100, 3000), "large");
  EXPECT_EQ(tuned_schedule_for(tuned, "causal.mha8.d64.f32", 1, 512, 512), std::nullopt);
  EXPECT_EQ(tuned_schedule_for(tuned, "full.mha8.d128.f32", 1, 512, 512), std::nullopt);
}

}  // namespace
}  // namespace attnforge::bench
