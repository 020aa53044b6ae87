#include "knob_values.h"

#include <nlohmann/json.hpp>

#include "schedules/knob_table.h"

namespace attnforge::autotune {

std::pair<std::string, std::vector<int>> parse_knob_values(const std::string& text) {
  using schedules::KnobEncoding;
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals + 1 == text.size()) {
    throw schedules::ScheduleError("--knob", "'" + text + "' is not name=value[,value...]");
  }
  const schedules::KnobRow& row = schedules::knob(text.substr(0, equals));
  if (row.encoding() == KnobEncoding::name_list) {
    throw schedules::ScheduleError(row.name(), "takes a list per value; it cannot be narrowed");
  }
  std::vector<int> codes;
  size_t start = equals + 1;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string value = text.substr(start, comma - start);
    nlohmann::json json = value;  // a name
    if (row.encoding() == KnobEncoding::boolean) {
      if (value != "true" && value != "false")
        json = nullptr;  // from_json names the knob
      else
        json = value == "true";
    } else if (row.encoding() == KnobEncoding::integer) {
      json = nlohmann::json::parse(value, nullptr, false);
    }
    codes.push_back(row.from_json(json));
    start = comma + 1;
  }
  return {row.name(), codes};
}

}  // namespace attnforge::autotune
