// Runs measurement jobs each in its own child process, so that a crash, a
// hang past the timeout or any other failure is recorded as that job's status
// and the tuning run goes on. Several jobs compile at once; a measurement runs
// alone: a job enters the measurement gate (a file lock) before timing, and
// the gate waits for compiles in flight and holds new ones back meanwhile, so
// no compile takes a core from a kernel being timed.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "record.h"

namespace attnforge::autotune {

struct Outcome {
  Status status = Status::ok;
  double ms_median = 0.0, ms_min = 0.0, ms_max = 0.0;
  std::string detail;
};

// A file lock shared by a run's children: held shared while compiling and
// exclusively while measuring.
class MeasurementGate {
 public:
  explicit MeasurementGate(std::filesystem::path lock_path) : path_(std::move(lock_path)) {}
  void compiling();  // shared; the runner calls it as each child starts
  void enter();      // exclusive, for the rest of the child process's life
  // Where locking reports waiting (a byte 1) and holding (a byte 2), so the
  // runner does not count time spent waiting for others against a timeout.
  void report_to(int fd) { report_fd_ = fd; }

 private:
  void lock(int operation);
  std::filesystem::path path_;
  int fd_ = -1;  // opened in the child that locks
  int report_fd_ = -1;
};

using Job = std::function<Outcome(MeasurementGate&)>;

struct RunnerOptions {
  int parallel_jobs = 2;         // children alive at once (compiling in parallel)
  double timeout_seconds = 120;  // per job, from its start, less time waiting for the gate
};

class ContainedRunner {
 public:
  ContainedRunner(std::filesystem::path work_dir, RunnerOptions options);

  // One Outcome per job, in order. Never throws for what a job does.
  std::vector<Outcome> run(const std::vector<Job>& jobs);

 private:
  std::filesystem::path work_dir_;
  RunnerOptions options_;
};

// Times `run` after one warm-up: repeats until at least `min_seconds` and 3
// runs, stopping early once the best and third-best are within 3%; at most
// `max_runs`. A run slower than 3 s is timed twice only.
Outcome time_runs(const std::function<void()>& run, double min_seconds, int max_runs);

}  // namespace attnforge::autotune
