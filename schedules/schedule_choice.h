// A schedule as a Generator's `schedule` parameter names it: a preset's name
// or schedule JSON.
#pragma once

#include <string>

#include "schedule.h"

namespace attnforge::schedules {

// Throws ScheduleError for an unknown preset or malformed JSON.
Schedule resolve_schedule(const std::string& choice);

}  // namespace attnforge::schedules
