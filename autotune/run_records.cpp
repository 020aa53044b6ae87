#include "run_records.h"

#include "spec/shape_bucket.h"

namespace attnforge::autotune {

namespace {

using schedules::Schedule;

std::string halide_version() {
  return std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
         std::to_string(HALIDE_VERSION_PATCH);
}

// This run's (spec, target, bucket) and generation: which records are its
// own. Those of another generation are measured again.
struct RunKey {
  explicit RunKey(const TuneOptions& options) {
    const Record own = make_record(options, nullptr, {});
    group = own.group();
    generation = own.generation();
  }
  bool holds(const Record& r) const { return r.group() == group && r.generation() == generation; }
  std::string group, generation;
};

}  // namespace

Record make_record(const TuneOptions& options, const nlohmann::json& schedule,
                   const Outcome& outcome) {
  Record r;
  r.spec = spec_key(options);
  r.target = options.target.to_string();
  r.bucket = shape_bucket(options.shape.batch, options.shape.q_len, options.shape.kv_len);
  r.schedule = schedule;
  r.status = outcome.status;
  r.ms_median = outcome.ms_median;
  r.ms_min = outcome.ms_min;
  r.ms_max = outcome.ms_max;
  r.detail = outcome.detail.substr(0, 2000);
  r.strategy = options.strategy;
  r.estimate = options.estimate_only;
  r.attnforge_version = ATTNFORGE_VERSION;
  r.halide_version = halide_version();
  r.time = utc_now();
  return r;
}

void read_competitor_times(const TuneOptions& options, const Database& database,
                           Progress& progress) {
  const RunKey run(options);
  for (const Record& r : database.records()) {
    const RecordKind kind = r.kind();
    const bool competitor = kind == RecordKind::naive || kind == RecordKind::autoscheduler;
    if (!competitor || r.status != Status::ok || !run.holds(r)) continue;
    if (kind == RecordKind::naive) {
      progress.naive_ms = r.ms_median;
    } else if (progress.autoscheduler_ms == 0.0 || r.ms_median < progress.autoscheduler_ms) {
      progress.autoscheduler_ms = r.ms_median;
    }
  }
}

std::map<std::string, Trial> recorded_outcomes(const TuneOptions& options,
                                               const Database& database) {
  const RunKey run(options);
  std::map<std::string, Trial> recorded;
  for (const Record& r : database.records()) {
    const bool candidate = r.kind() == RecordKind::preset || r.kind() == RecordKind::tuned;
    if (!candidate || !run.holds(r) || database.standing(r.key()) != &r) continue;
    try {
      recorded.emplace(r.key(), Trial{Schedule::from_json(r.schedule), r.status, r.ms_median});
    } catch (const schedules::ScheduleError&) {  // a schedule this version cannot read
    }
  }
  return recorded;
}

}  // namespace attnforge::autotune
