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

// The target whose naive kernel is the reference for `spec`: `target`, or
// the host CPU where no naive kernel takes the spec (bf16 on CUDA, which
// only the tensor-core form computes).
Halide::Target reference_target(const AttentionSpec& spec, const Halide::Target& target);

// Whether the naive kernel, the baseline of speedups, runs on `target` itself.
bool naive_runs_on(const AttentionSpec& spec, const Halide::Target& target);

class Measurement {
 public:
  // The jobs read `options` and the reference at `expected_path` when they
  // run: both must outlive them.
  Measurement(const TuneOptions& options, std::filesystem::path expected_path)
      : options_(options), expected_path_(std::move(expected_path)) {}

  // The naive baseline: writes the reference output, and times it when asked
  // (untimed where it runs on the host instead: naive_runs_on).
  Job baseline(bool timed) const;

  // Halide's own autoscheduler on the same algorithm, as a competitor.
  Job autoscheduled(const HalideAutoscheduler& autoscheduler) const;

  Job candidate(const schedules::Schedule& schedule) const;

 private:
  const TuneOptions& options_;
  std::filesystem::path expected_path_;
};

}  // namespace attnforge::autotune
