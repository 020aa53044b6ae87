#include "runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

namespace attnforge::autotune {

namespace {

using Clock = std::chrono::steady_clock;

nlohmann::json to_json(const Outcome& o) {
  return {{"status", to_string(o.status)},
          {"ms_median", o.ms_median},
          {"ms_min", o.ms_min},
          {"ms_max", o.ms_max},
          {"detail", o.detail}};
}

Outcome from_json(const std::string& text) {
  Outcome o;
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  try {
    if (json.is_discarded() || !json.is_object()) throw std::invalid_argument("no result");
    o.status = status_of(json.at("status").get<std::string>());
    o.ms_median = json.at("ms_median").get<double>();
    o.ms_min = json.at("ms_min").get<double>();
    o.ms_max = json.at("ms_max").get<double>();
    o.detail = json.value("detail", "");
  } catch (const std::exception&) {
    o = Outcome{Status::crashed, 0, 0, 0, "the measuring process wrote no result"};
  }
  return o;
}

struct Child {
  size_t job = 0;
  pid_t pid = -1;
  int pipe_fd = -1;
  std::string output;
  Clock::time_point start;
  bool killed_for_time = false;
  double waited_seconds = 0.0;  // for the measurement gate, not counted against the timeout
  std::optional<Clock::time_point> waiting_since;

  double busy_seconds(Clock::time_point now) const {
    double waiting =
        waiting_since ? std::chrono::duration<double>(now - *waiting_since).count() : 0;
    return std::chrono::duration<double>(now - start).count() - waited_seconds - waiting;
  }
};

constexpr char kWaiting = 1, kEntered = 2;  // gate reports; JSON escapes these bytes

// In the child: run the job, write its outcome to the pipe, exit without
// running the parent's atexit handlers or flushing its stdio twice.
[[noreturn]] void run_child(const Job& job, MeasurementGate& gate, int fd) {
  Outcome outcome;
  try {
    gate.report_to(fd);
    gate.compiling();
    outcome = job(gate);
  } catch (const std::exception& error) {
    outcome.status = Status::crashed;
    outcome.detail = error.what();
  } catch (...) {
    outcome.status = Status::crashed;
    outcome.detail = "unknown exception";
  }
  std::string text = to_json(outcome).dump();
  ssize_t ignored = ::write(fd, text.data(), text.size());
  (void)ignored;
  ::_exit(0);
}

void drain(Child& child) {
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(child.pipe_fd, buffer, sizeof buffer)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == kWaiting) {
        child.waiting_since = Clock::now();
      } else if (buffer[i] == kEntered && child.waiting_since) {
        child.waited_seconds +=
            std::chrono::duration<double>(Clock::now() - *child.waiting_since).count();
        child.waiting_since.reset();
      } else {
        child.output.push_back(buffer[i]);
      }
    }
  }
}

Outcome finish(Child& child, int wait_status) {
  drain(child);
  ::close(child.pipe_fd);
  if (child.killed_for_time) {
    return {Status::timed_out, 0, 0, 0, "killed after the timeout"};
  }
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return {Status::crashed, 0, 0, 0, std::string("killed by signal ") + strsignal(sig)};
  }
  return from_json(child.output);
}

}  // namespace

void MeasurementGate::lock(int operation) {
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  // One descriptor, so enter() converts this child's shared lock instead of
  // waiting on it. Held until the process exits.
  auto report = [this](char byte) {
    if (report_fd_ >= 0) (void)!::write(report_fd_, &byte, 1);
  };
  report(kWaiting);
  if (fd_ < 0 || ::flock(fd_, operation) != 0) throw std::runtime_error("measurement lock failed");
  report(kEntered);
}

void MeasurementGate::compiling() {
  lock(LOCK_SH);
}

void MeasurementGate::enter() {
  lock(LOCK_EX);
}

ContainedRunner::ContainedRunner(std::filesystem::path work_dir, RunnerOptions options)
    : work_dir_(std::move(work_dir)), options_(options) {}

std::vector<Outcome> ContainedRunner::run(const std::vector<Job>& jobs) {
  std::vector<Outcome> outcomes(jobs.size());
  std::vector<Child> running;
  MeasurementGate gate(work_dir_ / "measure.lock");
  size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < options_.parallel_jobs) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
      std::fflush(nullptr);
      pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        ::close(fds[0]);
        run_child(jobs[next], gate, fds[1]);
      }
      ::close(fds[1]);
      ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
      running.push_back({next++, pid, fds[0], "", Clock::now(), false, 0.0, std::nullopt});
    }
    for (auto it = running.begin(); it != running.end();) {
      drain(*it);
      int status = 0;
      if (::waitpid(it->pid, &status, WNOHANG) == it->pid) {
        outcomes[it->job] = finish(*it, status);
        it = running.erase(it);
        continue;
      }
      if (it->busy_seconds(Clock::now()) > options_.timeout_seconds && !it->killed_for_time) {
        ::kill(it->pid, SIGKILL);
        it->killed_for_time = true;
      }
      ++it;
    }
    ::usleep(2000);
  }
  return outcomes;
}

Outcome time_runs(const std::function<void()>& run, double min_seconds, int max_runs) {
  auto once = [&] {
    auto start = Clock::now();
    run();
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  double warm = once();
  std::vector<double> ms;
  double total = 0.0;
  const int limit = warm > 3000.0 ? 2 : max_runs;
  while (static_cast<int>(ms.size()) < limit) {
    ms.push_back(once());
    total += ms.back() / 1000.0;
    if (ms.size() >= 3 && total >= min_seconds) {
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      if (sorted[2] <= sorted[0] * 1.03) break;
    }
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  Outcome o;
  o.ms_median = sorted[sorted.size() / 2];
  o.ms_min = sorted.front();
  o.ms_max = sorted.back();
  return o;
}

}  // namespace attnforge::autotune
