// One measurement in the tuning database: which kernel (spec, target, shape
// bucket, schedule), how it went, and with which tool versions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace attnforge::autotune {

// ok: correct and timed. wrong: output differs from the reference. The rest
// never produced a timing.
enum class Status { ok, wrong, crashed, timed_out, compile_failed, invalid };

std::string to_string(Status status);
// Throws std::invalid_argument for an unknown name.
Status status_of(const std::string& name);

// What a record measured: the naive baseline, one of Halide's autoschedulers
// ("autoscheduler:<name>"), a schedule preset the tuner seeded its search
// with, or a schedule the search found.
enum class RecordKind { naive, autoscheduler, preset, tuned };

struct Record {
  std::string spec;         // canonical spec string
  std::string target;       // full Halide target string
  std::string bucket;       // shape bucket (spec/shape_bucket.h)
  nlohmann::json schedule;  // canonical schedule JSON, or a name for "naive"/autoschedulers
  Status status = Status::ok;
  double ms_median = 0.0, ms_min = 0.0, ms_max = 0.0;
  std::string detail;  // error text for failures
  std::string strategy;
  // A finalist measured again at the end of a run; as the newer record of its
  // key it stands for the candidate instead of the search's measurement.
  bool confirmation = false;
  // A cost model's estimate, never run or checked: ms_median is the model's
  // figure (a GPU target tuned on a machine without one). An estimate is a
  // candidate of its own (key()), so it neither hides nor stands in for a
  // measurement of the same schedule, and it is never a contender.
  bool estimate = false;
  // The spec's backward kernel (schedules/backward_schedule.h): its own
  // group, never compared with the forward's.
  bool backward = false;
  std::string attnforge_version;
  std::string halide_version;
  std::string time;  // UTC, ISO 8601

  // What makes two records the same candidate: spec, target, bucket,
  // schedule, generation and whether it is an estimate. A new generation
  // measures a candidate again.
  std::string key() const;
  // The kernels' generation: the attnforge and Halide versions that built
  // them. Timings are compared only within one generation, because a new
  // version can make any kernel faster or slower.
  std::string generation() const;
  // The group of records that measure the same problem: spec (and whether
  // backward), target, bucket.
  std::string group() const;
  // Read from the schedule (a name for the naive baseline and autoschedulers,
  // else a schedule's JSON) and the strategy ("preset:<name>" for a preset),
  // so records written before kinds were named read the same.
  RecordKind kind() const;
  // The strategy a preset's record carries, which kind() reads as a preset.
  static std::string preset_strategy(const std::string& preset_name);

  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the missing or ill-typed field.
  static Record from_json(const nlohmann::json& json);
};

// The current UTC time as ISO 8601, for Record::time.
std::string utc_now();

}  // namespace attnforge::autotune
