// Hand-tuned schedules (online_avx2, decode_avx512, online_cuda...), from
// schedules/presets/*.json (compiled in, so no file is read at run time).
#pragma once

#include <string>
#include <vector>

#include "schedule.h"

namespace attnforge::schedules {

// Names of every preset, e.g. "online_avx2", sorted.
std::vector<std::string> preset_names();

// Throws ScheduleError (field "preset") for an unknown name.
Schedule load_preset(const std::string& name);

}  // namespace attnforge::schedules
