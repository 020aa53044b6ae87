// Tuning a backward kernel: candidates (the presets first, then every fitting
// combination of the searched knob values, shuffled by the seed), each checked
// against the naive backward and recorded with backward = true in a group of
// its own; the finalists confirmed in rounds; a rerun continues where the
// last stopped; the forward's winners never include backward records.
#include "autotune/backward_tuning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "autotune/backward_problem.h"
#include "autotune/temp_dir.h"
#include "tests/support/test_targets.h"

namespace attnforge::autotune {
namespace {

using schedules::BackwardSchedule;

TEST(BackwardTuning, CandidatesStartWithThePresetsAndAllFit) {
  const AttentionSpec spec = AttentionSpec::parse("causal.gqa4x2.d32.f32");
  for (const Halide::Target& target : testing::lowering_targets()) {
    const bool avx512 = target.has_feature(Halide::Target::AVX512);
    const std::vector<BackwardSchedule> candidates = backward_candidates(spec, target, 1);
    ASSERT_GT(candidates.size(), 50u);
    EXPECT_EQ(
        candidates.front().to_json(),
        schedules::load_backward_preset(avx512 ? "backward_avx512" : "backward_avx2").to_json());
    std::set<std::string> unique;
    for (const BackwardSchedule& s : candidates) {
      EXPECT_FALSE(schedules::check_backward(s, spec, target)) << s.to_json().dump();
      EXPECT_EQ(s.bf16_dots, 0);  // f32 storage
      unique.insert(s.to_json().dump());
    }
    EXPECT_EQ(unique.size(), candidates.size());
    const std::vector<BackwardSchedule> other_seed = backward_candidates(spec, target, 2);
    EXPECT_NE(other_seed[5].to_json(), candidates[5].to_json());
  }
}

TEST(BackwardTuning, TunesCheckedCandidatesAndResumes) {
  TempDir dir;
  TuneOptions options;
  options.spec = AttentionSpec::parse("causal.br.kpad.gqa4x2.d32.f32");
  options.target = testing::kernel_target();
  options.shape = {2, 70, 45};
  options.budget_seconds = 300;
  options.max_candidates = 3;
  options.min_measure_seconds = 0.02;
  options.confirm_rounds = 2;
  options.finalists = 1;
  options.autoschedulers = false;
  if (!testing::kernels_run_here()) GTEST_SKIP() << "the kernel target does not run here";
  Database db(dir.path() / "tuning.jsonl");
  TuneSummary first = tune_backward(options, db);
  ASSERT_TRUE(first.best.has_value());
  EXPECT_TRUE(first.best->backward);
  EXPECT_EQ(first.progress.measured, 3);
  // The fastest and the fastest preset (and presets near it) measured again
  // in 2 rounds; the winner is a confirmed one.
  EXPECT_GE(first.progress.confirmed, 1);
  EXPECT_LE(first.progress.confirmed, 3);
  EXPECT_EQ(db.records().size(), 4u + first.progress.confirmed);  // and the naive reference
  for (const Record& r : db.records()) {
    EXPECT_TRUE(r.backward);
    EXPECT_EQ(r.status, Status::ok) << r.schedule.dump() << ": " << r.detail;
    if (r.confirmation) EXPECT_EQ(r.detail.rfind("confirmed in 2 rounds", 0), 0u) << r.detail;
  }
  EXPECT_TRUE(first.best->confirmation);
  EXPECT_LT(first.best->ms_median, first.progress.naive_ms);
  EXPECT_TRUE(db.winners().empty());  // the forward's winners: none

  options.confirm_rounds = 0;
  const size_t confirmed_run = db.records().size();
  TuneSummary again = tune_backward(options, db);
  EXPECT_EQ(again.progress.measured, 0);
  options.max_candidates = 5;
  TuneSummary more = tune_backward(options, db);
  EXPECT_EQ(more.progress.measured, 2);
  EXPECT_EQ(more.progress.confirmed, 0);
  EXPECT_EQ(db.records().size(), confirmed_run + 2);
}

// Halide's x86 autoschedulers on the backward algorithm: records of the
// backward group, checked like candidates, measured once per database.
TEST(BackwardTuning, AutoschedulersAreCompetitorsOncePerDatabase) {
  TempDir dir;
  TuneOptions options;
  options.spec = AttentionSpec::parse("causal.gqa4x2.d32.f32");
  options.target = testing::kernel_target();
  options.shape = {1, 40, 40};
  options.max_candidates = 1;
  options.confirm_rounds = 0;
  options.min_measure_seconds = 0.01;
  if (!testing::kernels_run_here()) GTEST_SKIP() << "the kernel target does not run here";
  Database db(dir.path() / "tuning.jsonl");
  const TuneSummary first = tune_backward(options, db);
  std::set<std::string> autoschedulers;
  for (const Record& r : db.records()) {
    if (r.kind() != RecordKind::autoscheduler) continue;
    EXPECT_TRUE(r.backward);
    autoschedulers.insert(r.schedule.get<std::string>());
    EXPECT_EQ(r.status, Status::ok) << r.schedule.dump() << ": " << r.detail;
  }
  EXPECT_EQ(autoschedulers,
            (std::set<std::string>{"autoscheduler:Adams2019", "autoscheduler:Li2018",
                                   "autoscheduler:Mullapudi2016"}));
  EXPECT_GT(first.progress.autoscheduler_ms, 0.0);
  const size_t records = db.records().size();
  const TuneSummary again = tune_backward(options, db);
  EXPECT_EQ(db.records().size(), records);
  EXPECT_EQ(again.progress.autoscheduler_ms, first.progress.autoscheduler_ms);
}

// With dBias, the candidates are checked on it too: its problem carries the
// bias's gradient after dq, dk and dv.
TEST(BackwardTuning, ADbiasProblemChecksTheBiasGradient) {
  const AttentionSpec spec = AttentionSpec::parse("full.bias.mqa4.d32.f32.dbias");
  BackwardProblem problem(spec, {2, 5, 9}, 3);
  ASSERT_NE(problem.arguments().d_bias, nullptr);
  problem.clear_gradients();
  const std::vector<float> gradients = problem.gradients();
  const size_t q = 2 * 4 * 5 * 32, kv = 2 * 1 * 9 * 32, bias = 2 * 4 * 5 * 9;
  ASSERT_EQ(gradients.size(), q + 2 * kv + bias);
  EXPECT_TRUE(std::isnan(gradients.back()));
  EXPECT_EQ(BackwardProblem(AttentionSpec::parse("full.bias.mqa4.d32.f32"), {2, 5, 9}, 3)
                .gradients()
                .size(),
            q + 2 * kv);
}

TEST(BackwardTuning, ABackwardRecordIsAGroupOfItsOwn) {
  Record forward;
  forward.spec = "causal.mha2.d32.f32";
  forward.target = "x86-64-linux-avx-avx2-f16c-fma-sse41";
  forward.bucket = "b1.q64.k64";
  forward.schedule = "naive";
  Record backward = forward;
  backward.backward = true;
  EXPECT_NE(forward.group(), backward.group());
  EXPECT_NE(forward.key(), backward.key());
  EXPECT_TRUE(Record::from_json(backward.to_json()).backward);
  EXPECT_FALSE(forward.to_json().contains("backward"));
}

}  // namespace
}  // namespace attnforge::autotune
