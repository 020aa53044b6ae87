// What a tuning run's strategy proposes first: the winners of related runs
// in the database, then the presets that fit the run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "database.h"
#include "schedules/schedule.h"
#include "schedules/space.h"
#include "tuner.h"

namespace attnforge::autotune {

// Presets that fit this spec and target, by canonical JSON: they seed every
// strategy, and their records say which preset they are. A layer's take the
// target's projection defaults.
std::map<std::string, std::string> fitting_presets(const TuneOptions& options);

// The related winners (at most a few, fitting `space`), then `presets` (from
// fitting_presets).
std::vector<schedules::Schedule> run_seeds(const TuneOptions& options, const Database& database,
                                           const schedules::ScheduleSpace& space,
                                           const std::map<std::string, std::string>& presets);

}  // namespace attnforge::autotune
