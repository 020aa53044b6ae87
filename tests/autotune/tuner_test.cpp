// A real tuning run of about 20 seconds on this machine: it measures Halide's
// autoschedulers and candidates, checks them against the naive baseline,
// beats that baseline, confirms its finalists, and a rerun on the same
// database continues without searching anything again.
#include "autotune/tuner.h"

#include <gtest/gtest.h>

#include <set>

#include "autotune/temp_dir.h"

namespace attnforge::autotune {
namespace {

TEST(Tuner, ShortRunBeatsTheNaiveBaselineAndResumes) {
  TempDir dir;
  const std::filesystem::path path = dir.path() / "tuning.jsonl";

  TuneOptions options;
  options.spec = AttentionSpec::parse("causal.gqa4x2.d64.f32");
  options.shape = {1, 200, 300};  // not a multiple of any tile
  options.budget_seconds = 20;    // the baseline and autoschedulers take part of it
  options.min_measure_seconds = 0.02;
  {
    Database db(path);
    TuneSummary first = tune(options, db);
    EXPECT_GT(first.progress.measured, 2);
    ASSERT_TRUE(first.best.has_value());
    EXPECT_GT(first.progress.naive_ms, 0.0);
    EXPECT_LT(first.best->ms_median, first.progress.naive_ms / 2);  // correct and faster
  }
  Database db(path);
  const size_t recorded = db.records().size();
  // Halide's three x86 autoschedulers ran on the same algorithm and were recorded.
  int autoschedulers = 0;
  for (const Record& r : db.records()) {
    if (r.schedule.is_string() && r.schedule.get<std::string>().rfind("autoscheduler:", 0) == 0) {
      ++autoschedulers;
      EXPECT_EQ(r.status, Status::ok) << r.schedule << ": " << r.detail;
    }
  }
  EXPECT_EQ(autoschedulers, 3);
  // The search measured each candidate once; the finalists, a preset among
  // them, were measured again, and those records stand for them.
  std::set<std::string> searched, confirmed;
  bool preset_confirmed = false;
  for (const Record& r : db.records()) {
    if (!r.confirmation) {
      EXPECT_TRUE(searched.insert(r.key()).second) << "searched twice: " << r.schedule.dump();
      continue;
    }
    EXPECT_TRUE(confirmed.insert(r.key()).second);
    EXPECT_EQ(db.standing(r.key()), &r);
    preset_confirmed = preset_confirmed || r.strategy.rfind("preset:", 0) == 0;
  }
  EXPECT_GE(confirmed.size(), 2u);
  EXPECT_TRUE(preset_confirmed);
  for (const std::string& key : confirmed) EXPECT_EQ(searched.count(key), 1u);

  options.budget_seconds = 4;
  TuneSummary second = tune(options, db);
  Database after(path);
  std::set<std::string> all;
  for (const Record& r : after.records()) {
    if (r.confirmation) continue;
    EXPECT_TRUE(all.insert(r.key()).second) << "searched twice: " << r.schedule.dump();
  }
  EXPECT_EQ(after.records().size(),
            recorded + second.progress.measured + second.progress.confirmed);
}

// A layer is tuned the same way: its records carry the layer spec, every
// candidate is checked against the naive layer, and the winner beats it.
TEST(Tuner, TunesAWholeLayer) {
  TempDir dir;
  TuneOptions options;
  options.layer = LayerSpec::parse("self.dm64.causal.mha2.d32.f32");
  options.spec = options.layer->attention;
  options.shape = {1, 150, 150};
  options.budget_seconds = 60;
  options.max_candidates = 4;
  options.min_measure_seconds = 0.02;
  Database db(dir.path() / "tuning.jsonl");
  TuneSummary summary = tune(options, db);
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_EQ(summary.best->spec, "self.dm64.causal.mha2.d32.f32");
  EXPECT_GT(summary.best->schedule.value("projection_rows", 0), 0);
  EXPECT_LT(summary.best->ms_median, summary.progress.naive_ms / 2);
  for (const Record& r : db.records()) {
    EXPECT_EQ(r.spec, "self.dm64.causal.mha2.d32.f32");
    EXPECT_NE(r.status, Status::wrong) << r.schedule.dump() << ": " << r.detail;
  }
}

// The GPU path of the tuner (the CUDA space, device buffers, the naive GPU
// kernel as the reference) through Halide's OpenCL target, which runs on the
// CPU with pocl; skipped where no OpenCL device exists.
TEST(Tuner, TunesGpuSchedulesOnAnOpenClDevice) {
  TempDir dir;
  TuneOptions options;
  options.spec = AttentionSpec::parse("causal.mha2.d32.f32");
  options.target = Halide::get_host_target().with_feature(Halide::Target::OpenCL);
  options.shape = {1, 70, 70};
  options.budget_seconds = 60;
  options.max_candidates = 6;
  options.min_measure_seconds = 0.02;
  Database db(dir.path() / "tuning.jsonl");
  TuneSummary summary;
  try {
    summary = tune(options, db);
  } catch (const std::runtime_error& error) {
    GTEST_SKIP() << "no OpenCL device: " << error.what();
  }
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_GT(summary.best->schedule.value("gpu_threads_x", 0), 0);
  int checked = 0;
  for (const Record& r : db.records()) {
    EXPECT_NE(r.status, Status::wrong) << r.schedule.dump() << ": " << r.detail;
    checked += r.status == Status::ok && r.schedule.is_object();
  }
  EXPECT_GE(checked, 3);
}

TEST(Tuner, DurationsParse) {
  EXPECT_DOUBLE_EQ(parse_duration("3m"), 180);
  EXPECT_DOUBLE_EQ(parse_duration("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("1h"), 3600);
  EXPECT_DOUBLE_EQ(parse_duration("45"), 45);
  EXPECT_THROW(parse_duration("soon"), std::invalid_argument);
  EXPECT_THROW(parse_duration("3d"), std::invalid_argument);
}

}  // namespace
}  // namespace attnforge::autotune
