// Implementations timed in turns interleave in every round, fast ones too,
// and keep to the repeats they are allowed.
#include "bench/timing.h"

#include <gtest/gtest.h>

#include <vector>

namespace attnforge::bench {
namespace {

// The order in which time_interleaved calls `count` runs, and its timings.
struct Calls {
  std::vector<int> order;
  std::vector<Timing> timings;
};

Calls interleave(int count, int rounds, const TimingOptions& options) {
  Calls calls;
  std::vector<std::function<void()>> runs;
  for (int n = 0; n < count; ++n) runs.push_back([&calls, n] { calls.order.push_back(n); });
  calls.timings = time_interleaved(runs, rounds, options);
  return calls;
}

TEST(TimeInterleaved, FastRunsShareTheirRepeatsOverEveryRound) {
  TimingOptions options;
  options.min_seconds = 60.0;  // never reached: the repeats bound every round
  options.max_repeats = 50;
  const Calls calls = interleave(3, 4, options);
  // One warm-up each, then 4 rounds of 12 runs (50 / 4) of each in turn.
  std::vector<int> expected = {0, 1, 2};
  for (int round = 0; round < 4; ++round) {
    for (int n = 0; n < 3; ++n) expected.insert(expected.end(), 12, n);
  }
  EXPECT_EQ(calls.order, expected);
  for (const Timing& timing : calls.timings) EXPECT_EQ(timing.repeats, 48);
}

TEST(TimeInterleaved, EveryRunIsTimedInEveryRoundWhateverItsRepeats) {
  TimingOptions options;
  options.min_seconds = 60.0;
  options.max_repeats = 2;  // fewer than the rounds
  const Calls calls = interleave(2, 4, options);
  EXPECT_EQ(calls.order, (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
  for (const Timing& timing : calls.timings) EXPECT_EQ(timing.repeats, 4);
}

}  // namespace
}  // namespace attnforge::bench
