#include "schedule_choice.h"

#include "bounded_json.h"
#include "presets.h"

namespace attnforge::schedules {

Schedule resolve_schedule(const std::string& choice) {
  if (!choice.empty() && choice.front() == '{') {
    nlohmann::json json;
    try {
      json = parse_bounded_json(choice, "schedule");
    } catch (const std::invalid_argument& error) {
      throw ScheduleError("schedule", error.what());
    }
    return Schedule::from_json(json);
  }
  return load_preset(choice);
}

}  // namespace attnforge::schedules
