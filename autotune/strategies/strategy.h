// A search strategy proposes schedules to measure next, given every result so
// far. Each is a small module behind this one interface and is deterministic
// for a given seed and history, so it can be tested on recorded results
// without compiling anything.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "autotune/record.h"
#include "schedules/schedule.h"
#include "schedules/space.h"

namespace attnforge::autotune {

// Where a proposed candidate stands in a tuning run.
enum class TrialState {
  recorded,     // measured, in this run or an earlier one: status and ms are its outcome
  pending,      // to be measured
  other_shard,  // another shard's to measure: never measured here
};

// One candidate's outcome as a strategy sees it. Strategies learn from the
// recorded trials that are ok; a pending or another shard's trial has no
// outcome, and its status is never ok, so they pass over it.
struct Trial {
  schedules::Schedule schedule;
  Status status = Status::ok;
  double ms = 0.0;  // median; meaningful only when status is ok
  TrialState state = TrialState::recorded;

  static Trial pending(schedules::Schedule schedule) {
    return {std::move(schedule), Status::invalid, 0.0, TrialState::pending};
  }
  static Trial of_other_shard(schedules::Schedule schedule) {
    return {std::move(schedule), Status::invalid, 0.0, TrialState::other_shard};
  }
};

class Strategy {
 public:
  // `seeds` (e.g. the presets) are proposed first, before anything the strategy draws.
  Strategy(const schedules::ScheduleSpace& space, uint32_t seed,
           std::vector<schedules::Schedule> seeds);
  virtual ~Strategy() = default;

  virtual std::string name() const = 0;

  // Up to `count` canonical, legal schedules never tried nor proposed before;
  // fewer (possibly none) when the strategy has run out. `history` is the same
  // growing list on every call (earlier entries unchanged).
  std::vector<schedules::Schedule> propose(const std::vector<Trial>& history, int count);

 protected:
  // Candidates in order of preference; propose() drops the seen and illegal ones.
  virtual std::vector<schedules::Schedule> generate(const std::vector<Trial>& history,
                                                    int count) = 0;

  bool seen(const schedules::Schedule& schedule) const;

  // `schedule` with one knob of the space set to one of its values, both
  // drawn at random; possibly illegal.
  schedules::Schedule mutate(schedules::Schedule schedule);

  const schedules::ScheduleSpace& space_;
  std::mt19937 rng_;

 private:
  std::vector<schedules::Schedule> seeds_;
  std::set<std::string> seen_;
  size_t history_taken_ = 0;
};

// The correct trials, fastest first.
std::vector<Trial> fastest_first(const std::vector<Trial>& history);

// Estimated times (ms) of schedules, in their order; nullopt for a schedule
// that has none.
using CostEstimator =
    std::function<std::vector<std::optional<double>>(const std::vector<schedules::Schedule>&)>;

// `model`, asked about each schedule once: a schedule it estimated before is
// answered from memory (a run that ranks a pool, then records its pick).
CostEstimator remembering(CostEstimator model);

// Names: exhaustive, random, evolutionary, model, and gpu-model, which ranks
// candidates by `estimator` and needs one. Throws std::invalid_argument
// listing them for any other name, or for gpu-model without an estimator.
std::unique_ptr<Strategy> make_strategy(const std::string& name,
                                        const schedules::ScheduleSpace& space, uint32_t seed,
                                        std::vector<schedules::Schedule> seeds,
                                        CostEstimator estimator = {});

// The strategies that need no estimator.
std::vector<std::string> strategy_names();

}  // namespace attnforge::autotune
