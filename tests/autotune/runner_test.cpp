// A candidate that crashes, hangs or is wrong is contained in its child
// process and recorded as that; the jobs around it still run.
#include "autotune/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "autotune/temp_dir.h"

namespace attnforge::autotune {
namespace {

class RunnerTest : public ::testing::Test {
 protected:
  TempDir work_dir_;
  const std::filesystem::path dir_ = work_dir_.path();
};

Job returns(Status status, double ms) {
  return [=](MeasurementGate& gate) {
    gate.enter();
    return Outcome{status, ms, ms, ms, ""};
  };
}

TEST_F(RunnerTest, CrashHangAndWrongAreContainedAndRecorded) {
  RunnerOptions options;
  options.timeout_seconds = 1.0;
  ContainedRunner runner(dir_, options);
  std::vector<Job> jobs = {
      returns(Status::ok, 1.5),
      [](MeasurementGate&) -> Outcome {
        raise(SIGSEGV);
        return {};
      },
      [](MeasurementGate&) -> Outcome {
        for (;;) pause();
      },
      returns(Status::wrong, 0.0),
      [](MeasurementGate&) -> Outcome { throw std::runtime_error("bad schedule"); },
      [](MeasurementGate&) -> Outcome { _exit(3); },
      returns(Status::ok, 2.5),
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<Outcome> outcomes = runner.run(jobs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(outcomes.size(), jobs.size());
  EXPECT_EQ(outcomes[0].status, Status::ok);
  EXPECT_DOUBLE_EQ(outcomes[0].ms_median, 1.5);
  EXPECT_EQ(outcomes[1].status, Status::crashed);
  EXPECT_NE(outcomes[1].detail.find("signal"), std::string::npos) << outcomes[1].detail;
  EXPECT_EQ(outcomes[2].status, Status::timed_out);
  EXPECT_EQ(outcomes[3].status, Status::wrong);
  EXPECT_EQ(outcomes[4].status, Status::crashed);
  EXPECT_EQ(outcomes[4].detail, "bad schedule");
  EXPECT_EQ(outcomes[5].status, Status::crashed);  // exited without a result
  EXPECT_EQ(outcomes[6].status, Status::ok);
  EXPECT_LT(seconds, 10.0);  // the hang cost its timeout, not the run
}

TEST_F(RunnerTest, MeasurementsNeverOverlap) {
  RunnerOptions options;
  options.parallel_jobs = 4;
  ContainedRunner runner(dir_, options);
  const std::filesystem::path marker = dir_ / "measuring";
  // Each job checks that no other job is inside the gate while it is.
  Job job = [marker](MeasurementGate& gate) {
    gate.enter();
    if (std::filesystem::exists(marker)) return Outcome{Status::wrong, 0, 0, 0, "overlap"};
    { std::ofstream(marker) << getpid(); }
    usleep(20000);
    std::filesystem::remove(marker);
    return Outcome{Status::ok, 1, 1, 1, ""};
  };
  std::vector<Outcome> outcomes = runner.run(std::vector<Job>(8, job));
  for (const Outcome& o : outcomes) EXPECT_EQ(o.status, Status::ok) << o.detail;
}

TEST_F(RunnerTest, NoCompileRunsWhileAKernelIsTimed) {
  RunnerOptions options;
  options.parallel_jobs = 3;
  ContainedRunner runner(dir_, options);
  const std::filesystem::path dir = dir_;
  // A job "compiles" (a marker file of its own for 30 ms), then measures and
  // checks that no other job is compiling meanwhile.
  Job job = [dir](MeasurementGate& gate) {
    const std::filesystem::path mine = dir / ("compiling." + std::to_string(getpid()));
    { std::ofstream(mine) << 1; }
    usleep(30000);
    std::filesystem::remove(mine);
    gate.enter();
    for (int check = 0; check < 10; ++check) {
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("compiling.", 0) == 0) {
          return Outcome{Status::wrong, 0, 0, 0, "a compile ran during a measurement"};
        }
      }
      usleep(2000);
    }
    return Outcome{Status::ok, 1, 1, 1, ""};
  };
  std::vector<Outcome> outcomes = runner.run(std::vector<Job>(9, job));
  for (const Outcome& o : outcomes) EXPECT_EQ(o.status, Status::ok) << o.detail;
}

TEST_F(RunnerTest, WaitingForTheGateDoesNotCountAgainstTheTimeout) {
  RunnerOptions options;
  options.parallel_jobs = 2;
  options.timeout_seconds = 0.5;
  ContainedRunner runner(dir_, options);
  // Each measures for 0.3 s: the second waits about that long for the first.
  Job job = [](MeasurementGate& gate) {
    gate.enter();
    usleep(300000);
    return Outcome{Status::ok, 1, 1, 1, ""};
  };
  std::vector<Outcome> outcomes = runner.run({job, job});
  for (const Outcome& o : outcomes) EXPECT_EQ(o.status, Status::ok) << o.detail;
}

TEST(TimeRuns, MedianMinMaxOfRepeatedRuns) {
  int calls = 0;
  Outcome o = time_runs(
      [&] {
        ++calls;
        usleep(1000);
      },
      0.01, 20);
  EXPECT_GE(calls, 4);  // a warm-up and at least three timed runs
  EXPECT_LE(calls, 21);
  EXPECT_GE(o.ms_min, 0.9);
  EXPECT_LE(o.ms_min, o.ms_median);
  EXPECT_LE(o.ms_median, o.ms_max);
}

}  // namespace
}  // namespace attnforge::autotune
