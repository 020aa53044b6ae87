// A record's kind is read from its schedule and strategy alone, so records
// written before kinds were named read the same.
#include <gtest/gtest.h>

#include "autotune/record.h"

namespace attnforge::autotune {
namespace {

Record with(nlohmann::json schedule, const std::string& strategy) {
  Record r;
  r.schedule = std::move(schedule);
  r.strategy = strategy;
  return r;
}

const nlohmann::json kSchedule = {{"form", "online"}, {"query_tile", 32}};

TEST(RecordKind, EachKindAsTheTunerWritesIt) {
  EXPECT_EQ(with("naive", "evolutionary").kind(), RecordKind::naive);
  EXPECT_EQ(with("autoscheduler:Adams2019", "evolutionary").kind(), RecordKind::autoscheduler);
  EXPECT_EQ(with(kSchedule, "preset:online_avx2").kind(), RecordKind::preset);
  EXPECT_EQ(with(kSchedule, "evolutionary").kind(), RecordKind::tuned);
  Record confirmed = with(kSchedule, "preset:online_avx2");
  confirmed.confirmation = true;  // a confirmation keeps its kind
  EXPECT_EQ(confirmed.kind(), RecordKind::preset);
}

TEST(RecordKind, OnlyAPresetPrefixMakesAPreset) {
  EXPECT_EQ(with(kSchedule, "").kind(), RecordKind::tuned);
  EXPECT_EQ(with(kSchedule, "model_guided").kind(), RecordKind::tuned);
  EXPECT_EQ(with(kSchedule, "random:preset").kind(), RecordKind::tuned);
  // A competitor is one whatever strategy ran beside it.
  EXPECT_EQ(with("naive", "preset:online_avx2").kind(), RecordKind::naive);
}

// Lines of the first recorded databases: no strategy, confirmation or versions.
TEST(RecordKind, OldRecordsWithoutAStrategyRead) {
  const char* base =
      R"("spec":"full.mha8.d64.f32","target":"x86-64-linux-avx-avx2-fma",)"
      R"("bucket":"b1.q512.k512","status":"ok","ms_median":1,"ms_min":1,"ms_max":1,)";
  auto read = [&](const std::string& schedule) {
    return Record::from_json(
        nlohmann::json::parse("{" + std::string(base) + "\"schedule\":" + schedule + "}"));
  };
  EXPECT_EQ(read(R"("naive")").kind(), RecordKind::naive);
  EXPECT_EQ(read(R"("autoscheduler:Li2018")").kind(), RecordKind::autoscheduler);
  EXPECT_EQ(read(R"({"form":"fused","query_tile":16})").kind(), RecordKind::tuned);
}

}  // namespace
}  // namespace attnforge::autotune
