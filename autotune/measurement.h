// What every measuring child of a tuning run does: compile a kernel (the
// naive baseline, one of Halide's autoschedulers or a candidate schedule),
// run it once and check its output against the reference, then time it.
#pragma once

#include <filesystem>

#include "builder.h"
#include "runner.h"
#include "schedules/schedule.h"
#include "tuner.h"

namespace attnforge::autotune {

class Measurement {
 public:
  // The jobs read `options` and the reference at `expected_path` when they
  // run: both must outlive them.
  Measurement(const TuneOptions& options, std::filesystem::path expected_path)
      : options_(options), expected_path_(std::move(expected_path)) {}

  // The naive baseline: writes the reference output, and times it when asked.
  Job baseline(bool timed) const;

  // Halide's own autoscheduler on the same algorithm, as a competitor.
  Job autoscheduled(const HalideAutoscheduler& autoscheduler) const;

  Job candidate(const schedules::Schedule& schedule) const;

 private:
  const TuneOptions& options_;
  std::filesystem::path expected_path_;
};

}  // namespace attnforge::autotune
