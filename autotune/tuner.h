// One tuning run, in four phases (tuning_run.h):
// 1. reference: the naive baseline writes the output every candidate is
//    checked against;
// 2. search: candidates from a strategy, seeded with related winners and the
//    presets, are measured in contained child processes, checked and recorded
//    in the database until the budget, less the time phase 3 will take, is
//    spent;
// 3. confirm: the finalists (the fastest candidates and the fastest preset)
//    are measured again in interleaved rounds, and those records stand for
//    them: one lucky or disturbed timing in the search decides neither the
//    winner nor its gain;
// 4. competitors: the naive baseline and Halide's autoschedulers are timed
//    and recorded alike, once per database.
// A simulation (TuneOptions::simulate) runs phases 2 and 3 only. A rerun
// with the same database continues: the strategy replays from its seed,
// reading back what is recorded instead of measuring it again, so a run
// killed and resumed any number of times ends where an uninterrupted one
// with the same seed and candidate budget ends.
#pragma once

#include <Halide.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "database.h"
#include "runner.h"
#include "schedules/schedule.h"
#include "spec/layer_spec.h"
#include "strategies/strategy.h"
#include "tuning_inputs.h"

namespace attnforge::autotune {

struct TuneOptions {
  AttentionSpec spec;
  // Set to tune this whole layer (spec is then its attention); Halide's
  // autoschedulers do not run on layers.
  std::optional<LayerSpec> layer;
  Halide::Target target = Halide::get_host_target();
  TuningShape shape;
  double budget_seconds = 180;
  std::string strategy = "evolutionary";
  uint32_t seed = 1;
  int threads = 0;  // kernel threads while measuring; 0: one per core
  int shard = 0;    // this machine takes the candidates whose key hashes to shard (mod shards)
  int shards = 1;
  RunnerOptions runner;
  double min_measure_seconds = 0.2;
  bool autoschedulers = true;  // also measure Halide's x86 autoschedulers (once per database)
  size_t max_candidates = 0;   // stop after this many proposals (0: only the time budget)
  // Knobs searched over only these values (codes, see KnobRow), e.g. to
  // search a smaller space; parse_knob_values reads them from text.
  std::map<std::string, std::vector<int>> knob_values;
  // Rounds in which the `finalists` fastest candidates and the fastest preset
  // are measured again (0: none); the search leaves time for them.
  int confirm_rounds = 3;
  size_t finalists = 3;
  // Simulation: candidates are "measured" by this instead of compiled and run,
  // and no baseline or autoscheduler runs (strategy and kill-safety tests).
  std::function<Outcome(const schedules::Schedule&)> simulate;
  // The gpu-model strategy's cost model; empty: scripts/gpu-cost-model.
  CostEstimator cost_model;
  // A GPU target with no GPU here: each candidate is estimated by that cost
  // model instead of run, and recorded as an estimate (Record::estimate).
  // There is no baseline, check, confirmation or competitor.
  bool estimate_only = false;
};

struct Progress {
  int measured = 0;      // this run
  int failures = 0;      // this run: wrong, crashed, timed out, failed to compile
  int confirmed = 0;     // this run: finalists measured again
  double best_ms = 0.0;  // 0 until a correct candidate exists (any run)
  double naive_ms = 0.0;
  double autoscheduler_ms = 0.0;  // the best of Halide's autoschedulers, 0 if none ran
  double seconds_left = 0.0;
};

struct TuneSummary {
  Progress progress;
  std::optional<Record> best;
};

TuneSummary tune(const TuneOptions& options, Database& database,
                 const std::function<void(const Progress&)>& on_progress = {});

// "3m", "90s", "1h", "45" (seconds); throws std::invalid_argument otherwise.
double parse_duration(const std::string& text);

// The spec string records carry: the layer's, or the attention's.
std::string spec_key(const TuneOptions& options);

// The key a record of `schedule` gets in this run's (spec, target, bucket).
std::string record_key(const TuneOptions& options, const nlohmann::json& schedule);

}  // namespace attnforge::autotune
