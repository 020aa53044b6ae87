#include "timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace attnforge::bench {
namespace {

double timed_seconds(const std::function<void()>& run) {
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Timing summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  double median = n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  return {median * 1e3, seconds.front() * 1e3, seconds.back() * 1e3, static_cast<int>(n)};
}

}  // namespace

Timing time_runs(const std::function<void()>& run, const TimingOptions& options) {
  const double warm_up = timed_seconds(run);
  if (warm_up > options.long_run_seconds) return summarize({warm_up});

  std::vector<double> samples;
  double total = 0.0;
  bool long_run = false;
  while (true) {
    const double seconds = timed_seconds(run);
    samples.push_back(seconds);
    total += seconds;
    long_run = long_run || seconds > options.long_run_seconds;
    const int count = static_cast<int>(samples.size());
    if (count >= options.max_repeats) break;
    if (long_run && count >= options.long_run_repeats) break;
    if (count >= options.min_repeats && total >= options.min_seconds) break;
  }
  return summarize(samples);
}

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& runs, int rounds,
                                     const TimingOptions& options) {
  for (const auto& run : runs) run();
  std::vector<std::vector<double>> samples(runs.size());
  // Each round takes its share of the time and of the repeats: a fast run
  // that took all of max_repeats in the first round would leave the later
  // rounds one sample each, and the turns would no longer interleave.
  const double share = options.min_seconds / std::max(1, rounds);
  const int repeats = std::max(1, options.max_repeats / std::max(1, rounds));
  for (int round = 0; round < rounds; ++round) {
    for (size_t n = 0; n < runs.size(); ++n) {
      double total = 0.0;
      int taken = 0;
      do {
        samples[n].push_back(timed_seconds(runs[n]));
        total += samples[n].back();
      } while (total < share && ++taken < repeats);
    }
  }
  std::vector<Timing> timings;
  for (auto& seconds : samples) timings.push_back(summarize(std::move(seconds)));
  return timings;
}

}  // namespace attnforge::bench
