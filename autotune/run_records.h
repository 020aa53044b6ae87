// A tuning run's records: the one it makes of an outcome, and what the
// database already holds for the run (its own generation of its spec, target
// and shape bucket).
#pragma once

#include <map>
#include <string>

#include "database.h"
#include "runner.h"
#include "strategies/strategy.h"
#include "tuner.h"

namespace attnforge::autotune {

// The record of `schedule` (JSON, or a name such as "naive") measured as
// `outcome` in this run, stamped with the tool versions and the time.
Record make_record(const TuneOptions& options, const nlohmann::json& schedule,
                   const Outcome& outcome);

// Outcomes of schedules already in the database for this run's (spec,
// target, bucket), by record key: each key's standing record.
std::map<std::string, Trial> recorded_outcomes(const TuneOptions& options,
                                               const Database& database);

// The recorded times of the naive baseline and the best autoscheduler, into `progress`.
void read_competitor_times(const TuneOptions& options, const Database& database,
                           Progress& progress);

}  // namespace attnforge::autotune
