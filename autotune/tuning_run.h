// The phases of one tuning run (tuner.h says what each does and in which
// order tune() runs them), each a member function, and the state they share:
// the budget's clock, a real run's work folder and runner, and every
// candidate recorded so far. Each phase records as it goes, so a run killed
// in any of them resumes from the database.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "database.h"
#include "measurement.h"
#include "runner.h"
#include "strategies/strategy.h"
#include "temp_dir.h"
#include "tuner.h"

namespace attnforge::autotune {

class TuningRun {
 public:
  // Validates the spec and starts the budget's clock. `options` and
  // `database` must outlive the run.
  TuningRun(const TuneOptions& options, Database& database,
            std::function<void(const Progress&)> on_progress);

  void reference();
  void search();
  void confirm();
  void competitors();

  const TuneSummary& summary() const { return summary_; }

 private:
  using Clock = std::chrono::steady_clock;

  // Each proposal as a trial: recorded (read back), pending, or another shard's.
  std::vector<Trial> trials_of(const std::vector<schedules::Schedule>& proposed) const;
  // Measures the pending trials and records them; returns how many.
  size_t measure_pending(std::vector<Trial>& trials);
  // Measures the finalists `keys` again in confirm_rounds rounds and records
  // the results, which then stand for them.
  void confirm_finalists(const std::vector<std::string>& keys);
  std::vector<Outcome> measure(const std::vector<schedules::Schedule>& batch);

  // The cost model of the gpu-model strategy and of estimating runs (empty
  // for the others).
  CostEstimator cost_model() const;
  bool ours(const std::string& record_key) const;
  double seconds_left() const;
  // The time the confirmation will take at the pace measured so far.
  double confirmation_seconds() const;
  void update_best();
  void report() const;

  const TuneOptions& options_;
  Database& database_;
  std::function<void(const Progress&)> on_progress_;
  const Clock::time_point start_;
  // Real runs measure in contained children, with their files in the work
  // folder; a simulation asks options.simulate. The folder outlives the
  // runner and is removed however the run ends.
  std::optional<TempDir> work_dir_;
  std::unique_ptr<ContainedRunner> runner_;
  std::unique_ptr<Measurement> measurement_;
  const std::map<std::string, std::string> presets_;  // canonical JSON -> preset name
  std::map<std::string, Trial> recorded_;             // record key -> its standing trial
  CostEstimator estimator_;  // cost_model(), made once per run, each schedule asked once
  TuneSummary summary_;
};

}  // namespace attnforge::autotune
