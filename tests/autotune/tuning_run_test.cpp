// The phases of a tuning run one by one, another shard's candidates, and the
// work folder of a real run, which goes however the run ends.
#include "autotune/tuning_run.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "autotune/temp_dir.h"
#include "tests/autotune/synthetic_timings.h"
#include "tests/support/scoped_env.h"

namespace attnforge::autotune {
namespace {

size_t confirmations(const Database& db) {
  size_t count = 0;
  for (const Record& r : db.records()) count += r.confirmation;
  return count;
}

TEST(TuningRun, EachPhaseRecordsItsOwnPart) {
  TempDir dir;
  Database db(dir.path() / "tuning.jsonl");
  TuneOptions options = simulated_tuning("causal.mha8.d64.f32", 12, 4);
  options.confirm_rounds = 2;
  TuningRun run(options, db, {});
  run.reference();  // a simulation checks nothing: no reference to write
  EXPECT_TRUE(db.records().empty());

  run.search();
  EXPECT_EQ(run.summary().progress.measured, 12);
  EXPECT_EQ(db.records().size(), 12u);
  EXPECT_EQ(confirmations(db), 0u);
  ASSERT_TRUE(run.summary().best.has_value());

  run.confirm();
  EXPECT_GT(run.summary().progress.confirmed, 0);
  EXPECT_EQ(confirmations(db), static_cast<size_t>(run.summary().progress.confirmed));
  EXPECT_TRUE(run.summary().best->confirmation);

  const size_t recorded = db.records().size();
  run.competitors();  // a simulation has none
  EXPECT_EQ(db.records().size(), recorded);
}

TEST(TuningRun, AnotherShardsCandidatesAreLeftToIt) {
  TempDir dir;
  std::set<std::string> keys[2];
  for (int shard = 0; shard < 2; ++shard) {
    TuneOptions options = simulated_tuning("causal.mha8.d64.f32", 40, 4);
    options.shard = shard;
    options.shards = 2;
    std::vector<schedules::Schedule> simulated;
    options.simulate = [&simulated, measure = options.simulate](const schedules::Schedule& s) {
      simulated.push_back(s);
      return measure(s);
    };
    Database db(dir.path() / ("shard" + std::to_string(shard) + ".jsonl"));
    const TuneSummary summary = tune(options, db);
    // Of the 40 proposals, only this shard's are measured, each once.
    EXPECT_GT(summary.progress.measured, 0);
    EXPECT_LT(summary.progress.measured, 40);
    EXPECT_EQ(simulated.size(), static_cast<size_t>(summary.progress.measured));
    for (const schedules::Schedule& s : simulated) {
      const std::string key = record_key(options, s.to_json());
      EXPECT_EQ(std::hash<std::string>()(key) % 2, static_cast<size_t>(shard));
      EXPECT_TRUE(keys[shard].insert(key).second);
    }
  }
  for (const std::string& key : keys[0]) EXPECT_EQ(keys[1].count(key), 0u);
}

// A real run stopped by an exception mid-search: its work folder (in
// $TMPDIR) is gone all the same.
// gpu-model ranks by a cost model of CUDA kernels: it refuses other targets,
// and on a CUDA target the run asks the model before it measures.
TEST(TuningRun, TheGpuModelStrategyRanksCudaCandidatesByItsModel) {
  TempDir dir;
  Database db(dir.path() / "tuning.jsonl");
  TuneOptions options = simulated_tuning("full.mha8.d64.f32", 12, 4);
  options.strategy = "gpu-model";
  try {
    tune(options, db);
    FAIL() << "an x86 target was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("CUDA"), std::string::npos) << error.what();
  }
  options.target = Halide::Target("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");
  size_t asked = 0;
  options.cost_model = [&asked](const std::vector<schedules::Schedule>& schedules) {
    asked += schedules.size();
    return std::vector<std::optional<double>>(schedules.size(), 1.0);
  };
  EXPECT_EQ(tune(options, db).progress.measured, 12);
  EXPECT_GT(asked, 0u);
}

// A CUDA target tuned where there is no GPU: the model estimates each
// candidate, nothing runs, and the estimates stay apart from measurements: a
// resumed run reads them back, a later run on the GPU measures every
// candidate again, and only its measurements win.
TEST(TuningRun, WithoutAGpuCandidatesAreEstimatedAndKeptApart) {
  TempDir dir;
  Database db(dir.path() / "tuning.jsonl");
  TuneOptions options = simulated_tuning("full.mha8.d64.f32", 10, 4);
  options.target = Halide::Target("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");
  options.strategy = "random";
  options.confirm_rounds = 2;
  const auto run_on_gpu = options.simulate;
  options.simulate = [](const schedules::Schedule&) {
    ADD_FAILURE() << "a candidate ran in an estimating run";
    return Outcome{};
  };
  options.estimate_only = true;
  size_t asked = 0;
  options.cost_model = [&asked](const std::vector<schedules::Schedule>& batch) {
    asked += batch.size();
    std::vector<std::optional<double>> ms;
    for (const schedules::Schedule& s : batch) ms.push_back(2.0 * synthetic_ms(s));
    return ms;
  };
  const TuneSummary estimated = tune(options, db);
  EXPECT_EQ(estimated.progress.measured, 10);
  EXPECT_EQ(asked, 10u);
  ASSERT_EQ(db.records().size(), 10u);  // no confirmation, baseline or competitor
  double fastest = 1e9;
  for (const Record& r : db.records()) {
    EXPECT_TRUE(r.estimate);
    EXPECT_FALSE(r.confirmation);
    fastest = std::min(fastest, r.ms_median);
  }
  ASSERT_TRUE(estimated.best.has_value());
  EXPECT_TRUE(estimated.best->estimate);
  EXPECT_DOUBLE_EQ(estimated.best->ms_median, fastest);
  EXPECT_TRUE(db.winners().empty());
  ASSERT_EQ(db.estimated_winners().size(), 1u);
  EXPECT_DOUBLE_EQ(db.estimated_winners()[0].ms_median, fastest);

  EXPECT_EQ(tune(options, db).progress.measured, 0);  // resumed: read back, not asked again
  EXPECT_EQ(asked, 10u);

  // gpu-model ranks a pool by the model, then records its picks: each
  // schedule is asked about once.
  TempDir ranked_dir;
  Database ranked(ranked_dir.path() / "tuning.jsonl");
  std::map<std::string, int> asked_about;
  TuneOptions ranking = options;
  ranking.strategy = "gpu-model";
  ranking.cost_model = [&asked_about](const std::vector<schedules::Schedule>& batch) {
    std::vector<std::optional<double>> ms;
    for (const schedules::Schedule& s : batch) {
      ++asked_about[s.to_json().dump()];
      ms.push_back(synthetic_ms(s));
    }
    return ms;
  };
  EXPECT_EQ(tune(ranking, ranked).progress.measured, 10);
  EXPECT_GT(asked_about.size(), 10u);
  for (const auto& [schedule, times] : asked_about) EXPECT_EQ(times, 1) << schedule;

  options.estimate_only = false;
  options.cost_model = {};
  options.simulate = run_on_gpu;
  options.confirm_rounds = 0;
  const TuneSummary measured = tune(options, db);
  EXPECT_EQ(measured.progress.measured, 10);
  ASSERT_TRUE(measured.best.has_value());
  EXPECT_FALSE(measured.best->estimate);
  EXPECT_DOUBLE_EQ(measured.best->ms_median, fastest / 2.0);
  EXPECT_EQ(db.estimated_winners().size(), 1u);  // the estimates are still there, apart
}

TEST(TuningRun, TheWorkFolderIsRemovedWhenTheRunThrows) {
  TempDir tmpdir, dir;
  testing::ScopedEnv redirected("TMPDIR", tmpdir.path().string());
  TuneOptions options;
  options.spec = AttentionSpec::parse("full.mha2.d32.f32");
  options.shape = {1, 64, 64};
  options.max_candidates = 1;
  options.min_measure_seconds = 0.01;
  options.autoschedulers = false;
  Database db(dir.path() / "tuning.jsonl");
  bool work_folder_seen = false;
  EXPECT_THROW(tune(options, db,
                    [&](const Progress&) {
                      work_folder_seen = std::filesystem::exists(tmpdir.path()) &&
                                         !std::filesystem::is_empty(tmpdir.path());
                      throw std::runtime_error("stopped");
                    }),
               std::runtime_error);
  EXPECT_TRUE(work_folder_seen);
  EXPECT_TRUE(std::filesystem::is_empty(tmpdir.path()));
}

}  // namespace
}  // namespace attnforge::autotune
