// What a tuning database says per (spec, target, shape bucket): the naive
// baseline, the best preset, the best of Halide's autoschedulers and the best
// schedule found, all measured alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "database.h"

namespace attnforge::autotune {

struct GroupSummary {
  std::string spec, target, bucket;
  std::optional<Record> naive;
  std::optional<Record> best_preset;         // a searched record seeded from a preset
  std::optional<Record> best_autoscheduler;  // "autoscheduler:<name>"
  std::optional<Record> best_tuned;          // the fastest searched schedule, presets included
  std::optional<Record> best_estimate;       // the fastest cost-model estimate (never run)
  int measured = 0, failures = 0;
  int estimated = 0;  // estimates, counted apart from measurements
};

// One entry per group, in the order groups first appear: the counts over the
// group's current generation (Database::current_records) and the winner of
// each kind (Database::winners), and the fastest estimate apart from them.
std::vector<GroupSummary> summarize(const Database& database);

}  // namespace attnforge::autotune
