#include "tuner.h"

#include <stdexcept>

#include "run_records.h"
#include "tuning_run.h"

namespace attnforge::autotune {

TuneSummary tune(const TuneOptions& options, Database& database,
                 const std::function<void(const Progress&)>& on_progress) {
  TuningRun run(options, database, on_progress);
  run.reference();
  run.search();
  run.confirm();
  run.competitors();
  return run.summary();
}

std::string spec_key(const TuneOptions& options) {
  return options.layer ? options.layer->to_string() : options.spec.to_string();
}

std::string record_key(const TuneOptions& options, const nlohmann::json& schedule) {
  return make_record(options, schedule, {}).key();
}

double parse_duration(const std::string& text) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || value < 0) {
    throw std::invalid_argument("duration '" + text + "': expected e.g. 90s, 3m, 1h");
  }
  return value * scale;
}

}  // namespace attnforge::autotune
