#include "timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace attnforge::bench {
namespace {

double timed_seconds(const std::function<void()>& run, const TimingOptions& options) {
  if (options.before_each) options.before_each();
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_of_sorted(const std::vector<double>& x) {
  const size_t n = x.size();
  return n % 2 == 1 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

Timing summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return {median_of_sorted(seconds) * 1e3, seconds.front() * 1e3, seconds.back() * 1e3,
          static_cast<int>(seconds.size())};
}

}  // namespace

Timing time_runs(const std::function<void()>& run, const TimingOptions& options) {
  const double warm_up = timed_seconds(run, options);
  if (warm_up > options.long_run_seconds) return summarize({warm_up});

  std::vector<double> samples;
  double total = 0.0;
  bool long_run = false;
  while (true) {
    const double seconds = timed_seconds(run, options);
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
  for (const auto& run : runs) timed_seconds(run, options);
  std::vector<std::vector<double>> samples(runs.size()), round_ms(runs.size());
  // Each round takes its share of the time and of the repeats: a fast run
  // that took all of max_repeats in the first round would leave the later
  // rounds one sample each, and the turns would no longer interleave.
  const double share = options.min_seconds / std::max(1, rounds);
  const int repeats = std::max(1, options.max_repeats / std::max(1, rounds));
  for (int round = 0; round < rounds; ++round) {
    for (size_t n = 0; n < runs.size(); ++n) {
      std::vector<double> this_round;
      double total = 0.0;
      do {
        this_round.push_back(timed_seconds(runs[n], options));
        total += this_round.back();
      } while (total < share && static_cast<int>(this_round.size()) < repeats);
      samples[n].insert(samples[n].end(), this_round.begin(), this_round.end());
      std::sort(this_round.begin(), this_round.end());
      round_ms[n].push_back(median_of_sorted(this_round) * 1e3);
    }
  }
  std::vector<Timing> timings;
  for (size_t n = 0; n < runs.size(); ++n) {
    timings.push_back(summarize(std::move(samples[n])));
    timings.back().round_ms = std::move(round_ms[n]);
  }
  return timings;
}

RoundRatio round_ratio(const Timing& a, const Timing& b) {
  std::vector<double> ratios;
  for (size_t r = 0; r < std::min(a.round_ms.size(), b.round_ms.size()); ++r) {
    ratios.push_back(a.round_ms[r] / b.round_ms[r]);
  }
  if (ratios.empty()) return {};
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  const size_t quarter = (n - 1) / 4;  // the same rank from either end
  return {median_of_sorted(ratios), ratios[quarter], ratios[n - 1 - quarter]};
}

}  // namespace attnforge::bench
