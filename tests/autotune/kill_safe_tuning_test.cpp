// The tuner killed with SIGKILL at 20 random moments and resumed each time,
// in simulation (candidates timed by a synthetic function, so nothing
// compiles): the database always loads, no record is lost beyond the one in
// flight, and the final winner and the set of candidates equal those of an
// uninterrupted run with the same seed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>

#include "autotune/temp_dir.h"
#include "autotune/tuner.h"
#include "schedules/space.h"
#include "tests/autotune/synthetic_timings.h"

namespace attnforge::autotune {
namespace {

TuneOptions simulated_run() {
  TuneOptions options = simulated_tuning("causal.mha8.d64.f32", 120, 5);
  options.simulate = [measure = options.simulate](const schedules::Schedule& s) {
    usleep(1500);  // long enough for kills to land mid-run
    return measure(s);
  };
  return options;
}

std::set<std::string> keys_of(const Database& db) {
  std::set<std::string> keys;
  for (const Record& r : db.records()) keys.insert(r.key());
  return keys;
}

TEST(KillSafeTuning, TwentyKillsThenResumeEndsLikeAnUninterruptedRun) {
  TempDir dir;
  Database uninterrupted(dir.path() / "uninterrupted.jsonl");
  TuneSummary expected = tune(simulated_run(), uninterrupted);
  ASSERT_TRUE(expected.best.has_value());

  const std::filesystem::path path = dir.path() / "killed.jsonl";
  std::mt19937 rng(42);
  size_t loaded = 0;
  int kills_that_landed = 0;
  for (int kill = 0; kill < 20; ++kill) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Database db(path);
      tune(simulated_run(), db);
      _exit(0);
    }
    usleep(std::uniform_int_distribution<int>(2000, 25000)(rng));
    ::kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) ++kills_that_landed;
    Database db(path);  // always loads
    EXPECT_GE(db.records().size(), loaded) << "kill " << kill << " lost records";
    EXPECT_LE(db.skipped_lines(), static_cast<size_t>(kill + 1)) << "more than the lines in flight";
    loaded = db.records().size();
  }
  EXPECT_GE(kills_that_landed, 15);  // most kills interrupted a run

  Database resumed(path);
  TuneSummary actual = tune(simulated_run(), resumed);
  ASSERT_TRUE(actual.best.has_value());
  EXPECT_EQ(actual.best->key(), expected.best->key());
  EXPECT_EQ(keys_of(Database(path)), keys_of(Database(dir.path() / "uninterrupted.jsonl")));
}

// A run starts from the winners of related runs in its database: another
// spec's fastest schedule on this target is proposed first, before the presets.
TEST(WarmStart, RelatedWinnersAreProposedFirst) {
  TempDir dir;
  Database db(dir.path() / "tuning.jsonl");
  TuneOptions options = simulated_run();
  schedules::ScheduleSpace space(options.spec, options.target);
  std::mt19937 rng(9);
  // Non-materialized draws: the materialized form's canonical schedule is a preset.
  auto draw = [&] {
    schedules::Schedule s;
    do s = space.sample(rng);
    while (s.form == schedules::Form::materialized);
    return s;
  };
  const schedules::Schedule winner = draw();
  Record related;
  related.spec = "full.mha8.d64.f32";
  related.target = options.target.to_string();
  related.bucket = "b1.q2048.k2048";
  related.schedule = winner.to_json();
  related.ms_median = related.ms_min = related.ms_max = 1.0;
  db.append(related);
  related.schedule = draw().to_json();
  related.ms_median = 2.0;  // slower: not the group's winner
  db.append(related);

  std::vector<schedules::Schedule> proposed;
  options.max_candidates = 3;
  options.simulate = [&](const schedules::Schedule& s) {
    proposed.push_back(s);
    return Outcome{Status::ok, 5.0, 5.0, 5.0, ""};
  };
  tune(options, db);
  ASSERT_FALSE(proposed.empty());
  EXPECT_EQ(proposed.front(), winner);
  EXPECT_EQ(std::count(proposed.begin(), proposed.end(),
                       schedules::Schedule::from_json(related.schedule)),
            0);
}

}  // namespace
}  // namespace attnforge::autotune
