// A knob's values as a user writes them on the command line, "name=v1,v2",
// read into the codes the schedule space restricts the knob to.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnforge::autotune {

// "key_block=32,64" -> {"key_block", {32, 64}}; "form=online", "group_heads=true".
// Throws schedules::ScheduleError naming the knob for an unknown knob, a
// value it cannot take, or a list-valued knob (parallel).
std::pair<std::string, std::vector<int>> parse_knob_values(const std::string& text);

}  // namespace attnforge::autotune
