// The confirmation at the end of a tuning run, in simulation: the first
// measurement of some candidates is lucky (too fast) and that of the presets
// disturbed (too slow), as on a noisy machine; every later one is exact. The
// finalists' confirmations must undo both, so neither the winner nor its gain
// over the best preset rests on one timing.
#include "autotune/confirmation.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "autotune/summary.h"
#include "autotune/temp_dir.h"
#include "autotune/tuner.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "tests/autotune/synthetic_timings.h"

namespace attnforge::autotune {
namespace {

using schedules::Schedule;

TuneOptions noisy_run(int confirm_rounds) {
  TuneOptions options = simulated_tuning("full.mha8.d64.f32", 40, 2);
  options.confirm_rounds = confirm_rounds;
  auto measured = std::make_shared<std::map<std::string, int>>();
  auto presets = std::make_shared<std::set<std::string>>();
  for (const std::string& name : schedules::presets_for(options.target)) {
    presets->insert(schedules::canonical(schedules::load_preset(name)).to_json().dump());
  }
  options.simulate = [measured, presets](const Schedule& s) {
    const std::string json = s.to_json().dump();
    double ms = synthetic_ms(s);
    if ((*measured)[json]++ == 0) {
      if (presets->count(json)) {
        ms *= 1.5;  // disturbed
      } else if (std::hash<std::string>()(json) % 4 == 0) {
        ms *= 0.8;  // lucky
      }
    }
    return Outcome{Status::ok, ms, ms, ms, ""};
  };
  return options;
}

// The standing record of the winner and of the best preset.
GroupSummary run(const TuneOptions& options, const std::filesystem::path& path) {
  Database db(path);
  tune(options, db);
  std::vector<GroupSummary> groups = summarize(Database(path));
  EXPECT_EQ(groups.size(), 1u);
  return groups.at(0);
}

double true_ms(const Record& r) {
  return synthetic_ms(Schedule::from_json(r.schedule));
}

TEST(Confirmation, WithoutItALuckyTimingWinsAndADisturbedPresetLoses) {
  TempDir dir;
  GroupSummary g = run(noisy_run(0), dir.path() / "tuning.jsonl");
  ASSERT_TRUE(g.best_tuned && g.best_preset);
  EXPECT_LT(g.best_tuned->ms_median, true_ms(*g.best_tuned));    // the premise
  EXPECT_GT(g.best_preset->ms_median, true_ms(*g.best_preset));  // of the next test
}

TEST(Confirmation, TheWinnerAndTheBestPresetStandOnConfirmedTimings) {
  TempDir dir;
  const TuneOptions options = noisy_run(2);
  GroupSummary g = run(options, dir.path() / "tuning.jsonl");
  ASSERT_TRUE(g.best_tuned && g.best_preset);
  EXPECT_TRUE(g.best_tuned->confirmation);
  EXPECT_DOUBLE_EQ(g.best_tuned->ms_median, true_ms(*g.best_tuned));
  EXPECT_TRUE(g.best_preset->confirmation);
  EXPECT_DOUBLE_EQ(g.best_preset->ms_median, true_ms(*g.best_preset));
  EXPECT_NE(g.best_tuned->detail.find("confirmed in 2 rounds"), std::string::npos);

  // Finalists, a preset among them, each confirmed once: their search records
  // stay in the file, and none still stands with a lucky timing.
  Database db(dir.path() / "tuning.jsonl");
  int confirmations = 0;
  for (const Record& r : db.records()) {
    if (!r.confirmation) continue;
    ++confirmations;
    EXPECT_EQ(db.standing(r.key()), &r);
    EXPECT_DOUBLE_EQ(r.ms_median, true_ms(r));
  }
  EXPECT_GE(confirmations, static_cast<int>(options.finalists));
}

// A preset whose one search timing was disturbed is confirmed with the
// fastest one when it might be the best: here it is (66 ms, measured 76).
TEST(Confirmation, EveryPresetThatMightBeTheBestIsMeasuredAgain) {
  Schedule fused = schedules::load_preset("fused_avx2"),
           online = schedules::load_preset("online_avx2");
  Schedule materialized = schedules::load_preset("materialized_avx2");
  Schedule tuned = online;
  tuned.pv_chunk = 32;
  const std::map<std::string, Trial> recorded = {
      {"tuned", {tuned, Status::ok, 55.0}},
      {"fused", {fused, Status::ok, 75.0}},
      {"online", {online, Status::ok, 76.0}},
      {"materialized", {materialized, Status::ok, 560.0}}};
  std::map<std::string, std::string> presets;
  for (const Schedule& s : {fused, online, materialized}) presets[s.to_json().dump()] = "preset";
  EXPECT_EQ(pick_finalists(recorded, presets, {}, 1),
            (std::vector<std::string>{"tuned", "fused", "online"}));
  // After the first pass, only the fastest unconfirmed candidates.
  EXPECT_EQ(pick_finalists(recorded, presets, {"tuned"}, 1), std::vector<std::string>{"fused"});
}

// A finalist that crashes when measured again is recorded so and no longer
// wins, whatever its search timing.
TEST(Confirmation, AFinalistThatFailsAgainNoLongerWins) {
  TempDir dir;
  TuneOptions options = noisy_run(1);
  auto count = std::make_shared<std::map<std::string, int>>();
  options.simulate = [count, inner = options.simulate](const Schedule& s) {
    Outcome outcome = inner(s);
    if ((*count)[s.to_json().dump()]++ > 0 && s.form == schedules::Form::online) {
      return Outcome{Status::crashed, 0, 0, 0, "crashed when measured again"};
    }
    return outcome;
  };
  GroupSummary g = run(options, dir.path() / "tuning.jsonl");
  ASSERT_TRUE(g.best_tuned.has_value());
  Database db(dir.path() / "tuning.jsonl");
  int crashed = 0;
  for (const Record& r : db.records()) {
    if (!r.confirmation || r.status != Status::crashed) continue;
    ++crashed;
    EXPECT_NE(r.key(), g.best_tuned->key());
  }
  EXPECT_GE(crashed, 1);  // online schedules are the fastest, so finalists
}

}  // namespace
}  // namespace attnforge::autotune
