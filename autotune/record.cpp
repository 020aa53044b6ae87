#include "record.h"

#include <array>
#include <ctime>
#include <stdexcept>

#include "schedules/knob_table.h"

namespace attnforge::autotune {

namespace {

constexpr std::array<std::pair<Status, const char*>, 6> kStatuses = {{
    {Status::ok, "ok"},
    {Status::wrong, "wrong"},
    {Status::crashed, "crashed"},
    {Status::timed_out, "timed_out"},
    {Status::compile_failed, "compile_failed"},
    {Status::invalid, "invalid"},
}};

template <typename T>
T field(const nlohmann::json& json, const char* name) {
  auto found = json.find(name);
  if (found == json.end())
    throw std::invalid_argument(std::string("record: ") + name + ": missing");
  try {
    return found->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("record: ") + name + ": wrong type");
  }
}

// An optional text field: empty when absent, and like a required one when
// of another type (the line is not a record).
std::string optional_text(const nlohmann::json& json, const char* name) {
  return json.contains(name) ? field<std::string>(json, name) : std::string();
}

}  // namespace

Status status_of(const std::string& text) {
  for (const auto& [status, name] : kStatuses) {
    if (text == name) return status;
  }
  throw std::invalid_argument("record: status: '" + text + "' is unknown");
}

std::string to_string(Status status) {
  for (const auto& [s, name] : kStatuses) {
    if (s == status) return name;
  }
  return "?";
}

std::string Record::preset_strategy(const std::string& preset_name) {
  return "preset:" + preset_name;
}

RecordKind Record::kind() const {
  if (schedule == "naive") return RecordKind::naive;
  if (schedule.is_string()) return RecordKind::autoscheduler;
  return strategy.rfind(preset_strategy(""), 0) == 0 ? RecordKind::preset : RecordKind::tuned;
}

std::string Record::key() const {
  return group() + "|" + schedule.dump() + "|" + generation() + (estimate ? "|estimate" : "");
}

std::string Record::generation() const {
  return "attnforge " + attnforge_version + ", Halide " + halide_version;
}

std::string Record::group() const {
  return spec + (backward ? " backward" : "") + "|" + target + "|" + bucket;
}

nlohmann::json Record::to_json() const {
  nlohmann::json json = {{"spec", spec},
                         {"target", target},
                         {"bucket", bucket},
                         {"schedule", schedule},
                         {"status", to_string(status)},
                         {"ms_median", ms_median},
                         {"ms_min", ms_min},
                         {"ms_max", ms_max},
                         {"detail", detail},
                         {"strategy", strategy},
                         {"confirmation", confirmation},
                         {"attnforge_version", attnforge_version},
                         {"halide_version", halide_version},
                         {"time", time}};
  if (estimate) json["estimate"] = true;  // measurements keep the fields they always had
  if (backward) json["backward"] = true;
  return json;
}

Record Record::from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw std::invalid_argument("record: not a JSON object");
  Record r;
  r.spec = field<std::string>(json, "spec");
  r.target = field<std::string>(json, "target");
  r.bucket = field<std::string>(json, "bucket");
  auto schedule = json.find("schedule");
  if (schedule == json.end()) throw std::invalid_argument("record: schedule: missing");
  // Keys renamed since the record was written read as today's, so its key
  // matches a new measurement of the same schedule.
  r.schedule = schedules::with_current_knob_names(*schedule);
  r.status = status_of(field<std::string>(json, "status"));
  r.ms_median = field<double>(json, "ms_median");
  r.ms_min = field<double>(json, "ms_min");
  r.ms_max = field<double>(json, "ms_max");
  r.detail = optional_text(json, "detail");
  r.strategy = optional_text(json, "strategy");
  r.confirmation = json.contains("confirmation") && field<bool>(json, "confirmation");
  r.estimate = json.contains("estimate") && field<bool>(json, "estimate");
  r.backward = json.contains("backward") && field<bool>(json, "backward");
  r.attnforge_version = optional_text(json, "attnforge_version");
  r.halide_version = optional_text(json, "halide_version");
  r.time = optional_text(json, "time");
  return r;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace attnforge::autotune
