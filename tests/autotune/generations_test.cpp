// A database made by an older attnforge: a rerun measures every candidate
// again instead of reading old timings back, the new records win from then on,
// and the old ones stay in the file.
#include <gtest/gtest.h>

#include <fstream>

#include "autotune/summary.h"
#include "autotune/temp_dir.h"
#include "autotune/tuner.h"
#include "tests/autotune/synthetic_timings.h"

namespace attnforge::autotune {
namespace {

TuneOptions simulated_run() {
  return simulated_tuning("full.mha8.d64.f32", 30, 3);
}

// Rewrites every record as if an older attnforge had made it a day earlier,
// 10x faster than measured now.
void age_records(const std::filesystem::path& path) {
  std::vector<Record> records = Database(path).records();
  std::filesystem::remove(path);
  for (Record& r : records) {
    r.attnforge_version = "0.0.1";
    r.time = "2000-01-01T00:00:00Z";
    r.ms_median = r.ms_min = r.ms_max = r.ms_median / 10;
  }
  Database(path).append(records);
}

TEST(Generations, ARerunOfTheSameGenerationMeasuresNothing) {
  TempDir dir;
  const std::filesystem::path path = dir.path() / "tuning.jsonl";
  Database db(path);
  EXPECT_EQ(tune(simulated_run(), db).progress.measured, 30);
  EXPECT_EQ(tune(simulated_run(), db).progress.measured, 0);
}

TEST(Generations, AnOlderGenerationIsMeasuredAgainAndThenLoses) {
  TempDir dir;
  const std::filesystem::path path = dir.path() / "tuning.jsonl";
  {
    Database db(path);
    tune(simulated_run(), db);
  }
  age_records(path);
  Database db(path);
  const Record old_best = *db.best("full.mha8.d64.f32", simulated_run().target.to_string(),
                                   db.records().front().bucket);
  EXPECT_EQ(old_best.attnforge_version, "0.0.1");  // until a rerun, the old ones are current

  TuneSummary rerun = tune(simulated_run(), db);
  EXPECT_EQ(rerun.progress.measured, 30);
  ASSERT_TRUE(rerun.best.has_value());
  EXPECT_NE(rerun.best->attnforge_version, "0.0.1");  // slower, but the only ones compared
  EXPECT_DOUBLE_EQ(rerun.best->ms_median, old_best.ms_median * 10);

  Database reloaded(path);
  EXPECT_EQ(reloaded.records().size(), 60u);  // the old records are kept
  for (const GroupSummary& g : summarize(reloaded)) {
    EXPECT_EQ(g.measured, 30);
    EXPECT_NE(g.best_tuned->attnforge_version, "0.0.1");
  }
}

}  // namespace
}  // namespace attnforge::autotune
