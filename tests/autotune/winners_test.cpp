// Database::winners: of each (spec, target, bucket) group the fastest correct
// contender the filter admits, under the generation and confirmation rules.
#include <gtest/gtest.h>

#include "autotune/database.h"
#include "autotune/temp_dir.h"
#include "tests/support/tuned_record.h"

namespace attnforge::autotune {
namespace {

const char* const kSpec = "causal.mha8.d64.f32";
const char* const kAvx2 = "x86-64-linux-avx-avx2-fma";
const char* const kAvx512 = "x86-64-linux-avx-avx2-avx512-fma";
const char* const kBucket = "b1.q2048.k2048";

Record make_record(int query_tile, double ms, Status status = Status::ok) {
  Record r = tuned_record(kSpec, kAvx2, kBucket, query_tile, ms, status);
  r.strategy = "evolutionary";
  r.time = "2026-01-01T00:00:00Z";
  return r;
}

Record competitor(const std::string& name, double ms) {
  Record r = make_record(0, ms);
  r.schedule = name;
  return r;
}

class Winners : public ::testing::Test {
 protected:
  autotune::TempDir dir_;
  Database db_{dir_.path() / "tuning.jsonl"};
};

TEST_F(Winners, OnePerGroupOrderedBySpecTargetAndBucket) {
  Record small = make_record(1, 4.0);
  small.bucket = "b1.q512.k512";
  Record avx512 = make_record(2, 0.5);
  avx512.target = kAvx512;
  Record other_spec = make_record(3, 9.0);
  other_spec.spec = "causal.mha8.d128.f32";
  db_.append(std::vector<Record>{make_record(4, 3.0), avx512, make_record(5, 2.0), small,
                                 other_spec, make_record(6, 2.5)});
  std::vector<Record> winners = db_.winners();
  ASSERT_EQ(winners.size(), 4u);
  EXPECT_EQ(winners[0].spec, "causal.mha8.d128.f32");
  EXPECT_EQ(winners[1].target, kAvx512);  // "...avx2-avx512-fma" sorts before "...avx2-fma"
  EXPECT_EQ(winners[2].bucket, kBucket);  // "b1.q2048..." sorts before "b1.q512..."
  EXPECT_EQ(winners[2].schedule["query_tile"], 5);
  EXPECT_EQ(winners[3].bucket, "b1.q512.k512");
}

TEST_F(Winners, WrongAndFailedRecordsNeverWin) {
  db_.append(std::vector<Record>{make_record(1, 3.0), make_record(2, 1.0, Status::wrong),
                                 make_record(3, 0.0, Status::crashed)});
  Record only_wrong = make_record(4, 1.0, Status::wrong);
  only_wrong.bucket = "b1.q512.k512";
  db_.append(only_wrong);
  std::vector<Record> winners = db_.winners();
  ASSERT_EQ(winners.size(), 1u);  // the all-wrong group has no winner
  EXPECT_EQ(winners[0].schedule["query_tile"], 1);
}

TEST_F(Winners, KindsTargetAndAdmitsFilterBeforeTheFastestIsPicked) {
  Record preset = make_record(1, 5.0);
  preset.strategy = "preset:online_avx2";
  Record avx512 = make_record(3, 1.0);
  avx512.target = kAvx512;
  db_.append(std::vector<Record>{competitor("naive", 0.5), competitor("autoscheduler:Li2018", 0.8),
                                 preset, make_record(2, 6.0), avx512});
  auto winner = [&](const WinnerFilter& filter) {
    std::vector<Record> winners = db_.winners(filter);
    EXPECT_EQ(winners.size(), 1u);
    return winners.empty() ? Record{} : winners[0];
  };
  EXPECT_EQ(winner({kAvx2, {}, {}}).schedule, "naive");
  EXPECT_EQ(winner({kAvx2, {RecordKind::autoscheduler}, {}}).schedule, "autoscheduler:Li2018");
  EXPECT_EQ(winner({kAvx2, {RecordKind::preset, RecordKind::tuned}, {}}).kind(),
            RecordKind::preset);
  EXPECT_EQ(winner({kAvx2, {RecordKind::tuned}, {}}).schedule["query_tile"], 2);
  EXPECT_EQ(winner({kAvx512, {}, {}}).schedule["query_tile"], 3);
  EXPECT_EQ(winner({kAvx2, {}, [](const Record& r) { return r.ms_median > 5.5; }}).ms_median, 6.0);
  EXPECT_EQ(db_.winners({"", {RecordKind::tuned}, {}}).size(), 2u);  // both targets
}

TEST_F(Winners, OfEqualTimesTheEarlierLineWins) {
  db_.append(std::vector<Record>{make_record(1, 2.0), make_record(2, 2.0)});
  EXPECT_EQ(db_.winners().at(0).schedule["query_tile"], 1);
}

// Confirmed schedules alone contend where a group has them; competitors always.
TEST_F(Winners, FollowTheConfirmationRule) {
  Record confirmed = make_record(1, 3.0);
  confirmed.confirmation = true;
  db_.append(std::vector<Record>{make_record(1, 1.0), make_record(2, 2.0), confirmed});
  std::vector<Record> winners = db_.winners();
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_TRUE(winners[0].confirmation);  // not the lucky 2.0 ms that no confirmation reached
  EXPECT_DOUBLE_EQ(winners[0].ms_median, 3.0);
  db_.append(competitor("autoscheduler:Adams2019", 2.5));
  EXPECT_EQ(db_.winners().at(0).schedule, "autoscheduler:Adams2019");
  EXPECT_EQ(db_.winners({"", {RecordKind::tuned}, {}}).at(0).ms_median, 3.0);
}

// A group's winner comes from its newest generation with a correct record.
TEST_F(Winners, FollowTheCurrentGeneration) {
  Record old_fast = make_record(1, 1.0);
  old_fast.attnforge_version = "0.1.0";
  Record new_slow = make_record(2, 2.0);
  new_slow.attnforge_version = "0.2.0";
  new_slow.time = "2026-02-01T00:00:00Z";
  Record newer_failed = make_record(3, 0.0, Status::compile_failed);
  newer_failed.attnforge_version = "0.3.0";
  newer_failed.time = "2026-03-01T00:00:00Z";
  db_.append(std::vector<Record>{old_fast, new_slow, newer_failed});
  std::vector<Record> winners = db_.winners();
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(winners[0].attnforge_version, "0.2.0");
}

TEST_F(Winners, BestIsTheWinnerOfOneGroup) {
  Record small = make_record(1, 4.0);
  small.bucket = "b1.q512.k512";
  db_.append(std::vector<Record>{make_record(2, 3.0), small, make_record(3, 2.0)});
  for (const Record& winner : db_.winners()) {
    std::optional<Record> best = db_.best(winner.spec, winner.target, winner.bucket);
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(best->to_json(), winner.to_json());
  }
  EXPECT_FALSE(db_.best(kSpec, kAvx512, kBucket).has_value());
}

}  // namespace
}  // namespace attnforge::autotune
