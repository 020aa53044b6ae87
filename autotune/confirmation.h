// The confirmation at the end of a tuning run: which finalists are measured
// again, and what their rounds add up to.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runner.h"
#include "strategies/strategy.h"

namespace attnforge::autotune {

// Presets this close to the fastest preset's search timing are confirmed too:
// on a busy machine one disturbed timing could otherwise leave the best
// preset behind a slower one, and the tuned gain over it overstated.
constexpr double kPresetMargin = 1.25;

// At most this many passes of finalists: a pass that leaves an unconfirmed
// leader (a lucky timing further down) is followed by another where the
// budget has room for it.
constexpr int kConfirmationPasses = 3;

// A correct measurement that may become a finalist.
struct Contender {
  std::string key;  // its record key
  double ms = 0.0;  // its median
  bool preset = false;
};

// The next finalists among `contenders`: the `count` fastest not in
// `confirmed`, and, while `confirmed` is empty, the fastest preset even if
// slower, with every preset within kPresetMargin of it. Returns their record
// keys, fastest first.
std::vector<std::string> pick_finalists(std::vector<Contender> contenders,
                                        const std::set<std::string>& confirmed, size_t count);

// The same over `recorded` (record key -> trial), whose presets' schedule
// JSON `presets` holds.
std::vector<std::string> pick_finalists(const std::map<std::string, Trial>& recorded,
                                        const std::map<std::string, std::string>& presets,
                                        const std::set<std::string>& confirmed, size_t count);

// One outcome from a finalist's rounds: the first failure, or the median of
// the rounds' medians with the extremes of all runs.
Outcome combine_rounds(const std::vector<Outcome>& rounds);

// The finalists `keys` measured in `rounds` rounds, each round in a rotated
// order (no finalist is always measured first); `measure` takes one round's
// keys in order and returns their outcomes. Returns each key's
// combine_rounds, in the order of `keys`.
std::vector<Outcome> measure_in_rounds(
    const std::vector<std::string>& keys, int rounds,
    const std::function<std::vector<Outcome>(const std::vector<std::string>&)>& measure);

}  // namespace attnforge::autotune
