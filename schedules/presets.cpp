#include "presets.h"

#include <algorithm>

#include "preset_data.h"

namespace attnforge::schedules {

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const PresetText& preset : kPresetTexts) names.push_back(preset.name);
  std::sort(names.begin(), names.end());
  return names;
}

Schedule load_preset(const std::string& name) {
  for (const PresetText& preset : kPresetTexts) {
    if (name == preset.name) return Schedule::from_json(nlohmann::json::parse(preset.json));
  }
  std::string known;
  for (const std::string& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw ScheduleError("preset", "'" + name + "' is unknown; presets: " + known);
}

}  // namespace attnforge::schedules
