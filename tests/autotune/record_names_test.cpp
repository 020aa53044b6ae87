// Records written before a knob was renamed keep their keys: a new
// measurement of the same schedule is the same candidate.
#include <gtest/gtest.h>

#include "autotune/record.h"
#include "schedules/schedule.h"

namespace attnforge::autotune {
namespace {

TEST(RecordNames, AnOldRecordAndANewOneOfTheSameScheduleShareAKey) {
  schedules::Schedule schedule;
  schedule.q_copy_at = schedules::StoreLevel::root;
  Record fresh;
  fresh.spec = "full.mha8.d64.f32";
  fresh.target = "x86-64-linux-avx-avx2-f16c-fma-sse41";
  fresh.bucket = "b1.q2048.k2048";
  fresh.schedule = schedule.to_json();
  nlohmann::json old = fresh.to_json();
  old["schedule"].erase("q_copy_at");
  old["schedule"]["intermediates"] = "root";
  const Record read = Record::from_json(old);
  EXPECT_EQ(read.key(), Record::from_json(fresh.to_json()).key());
  EXPECT_EQ(schedules::Schedule::from_json(read.schedule), schedule);
}

}  // namespace
}  // namespace attnforge::autotune
