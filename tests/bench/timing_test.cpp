// Implementations timed in turns interleave in every round, fast ones too,
// and keep to the repeats they are allowed; untimed work may precede each run.
#include "bench/timing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
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

TEST(TimeInterleaved, EachRunKeepsOneMedianPerRound) {
  TimingOptions options;
  options.min_seconds = 60.0;
  options.max_repeats = 12;
  const Calls calls = interleave(2, 3, options);
  for (const Timing& timing : calls.timings) {
    ASSERT_EQ(timing.round_ms.size(), 3u);
    for (double ms : timing.round_ms) {
      EXPECT_GE(ms, timing.min_ms);
      EXPECT_LE(ms, timing.max_ms);
    }
  }
}

// Untimed work before every run, warm-ups too: interleaved, it precedes each
// run's call; its time is in no sample.
TEST(BeforeEach, PrecedesEveryRunAndIsNotTimed) {
  TimingOptions options;
  options.min_seconds = 60.0;
  options.max_repeats = 4;
  std::vector<int> order;
  options.before_each = [&order] {
    order.push_back(-1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  std::vector<std::function<void()>> runs = {[&order] { order.push_back(0); },
                                             [&order] { order.push_back(1); }};
  const std::vector<Timing> timings = time_interleaved(runs, 2, options);
  ASSERT_EQ(order.size() % 2, 0u);
  for (size_t n = 0; n < order.size(); n += 2) {
    EXPECT_EQ(order[n], -1) << n;
    EXPECT_GE(order[n + 1], 0) << n;
  }
  EXPECT_EQ(order.size(), 2u * (2 + timings[0].repeats + timings[1].repeats));
  for (const Timing& timing : timings) EXPECT_LT(timing.max_ms, 10.0);

  order.clear();
  const Timing alone = time_runs([&order] { order.push_back(0); }, options);
  EXPECT_EQ(order.size(), 2u * (1 + alone.repeats));  // the warm-up and each repeat
  EXPECT_LT(alone.max_ms, 10.0);
}

// Each round's ratio, then their median and quartiles: a round in which the
// host ran twice as slow for both counts as the ratio it had.
TEST(RoundRatio, MedianAndQuartilesOfThePerRoundRatios) {
  Timing a, b;
  a.round_ms = {11.0, 24.0, 10.5, 13.0, 12.0};
  b.round_ms = {10.0, 20.0, 10.0, 10.0, 10.0};
  const RoundRatio r = round_ratio(a, b);  // ratios 1.1 1.2 1.05 1.3 1.2
  EXPECT_DOUBLE_EQ(r.median, 1.2);
  EXPECT_DOUBLE_EQ(r.low, 1.1);
  EXPECT_DOUBLE_EQ(r.high, 1.2);
  EXPECT_EQ(round_ratio(a, Timing{}).median, 0.0);  // no rounds in common: no ratio
}

}  // namespace
}  // namespace attnforge::bench
