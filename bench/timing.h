// Wall-clock timing of a repeatable piece of work: a warm-up run, then repeats
// until enough runs and enough total time, with caps for slow work.
#pragma once

#include <functional>
#include <vector>

namespace attnforge::bench {

struct TimingOptions {
  int min_repeats = 3;
  double min_seconds = 0.5;  // total time of the timed repeats
  int max_repeats = 50;
  // A warm-up run longer than this is kept as the only sample (a second run
  // would add tens of seconds and tell little); a timed run longer than this
  // ends the repeats once long_run_repeats are done.
  double long_run_seconds = 3.0;
  int long_run_repeats = 2;
  // Untimed work before every run, the warm-up too (a cache eviction).
  std::function<void()> before_each;
};

struct Timing {
  double median_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  int repeats = 0;
  std::vector<double> round_ms;  // time_interleaved: the median of each round
};

// a / b for two implementations timed in the same turns: the median and
// quartiles of their per-round ratios. A host whose speed drifts from round
// to round moves both alike within one round, so this is steadier than the
// ratio of their medians.
struct RoundRatio {
  double median = 0.0, low = 0.0, high = 0.0;
};
RoundRatio round_ratio(const Timing& a, const Timing& b);

Timing time_runs(const std::function<void()>& run, const TimingOptions& options = {});

// Several implementations timed in turns: after one warm-up each, `rounds`
// rounds in which each runs for its share of options.min_seconds, or of
// options.max_repeats if that comes first (at least once). A machine whose speed drifts (a shared
// host) then shifts every implementation alike instead of whichever was timed during a slow spell.
std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& runs, int rounds,
                                     const TimingOptions& options = {});

}  // namespace attnforge::bench
