// The confirmation at the end of a tuning run: which finalists are measured
// again, and what their rounds add up to.
#pragma once

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

// The next finalists among `recorded` (record key -> trial): the `count`
// fastest correct ones not in `confirmed`, and, while `confirmed` is empty,
// the fastest preset (`presets` holds their schedule JSON) even if slower,
// with every preset within kPresetMargin of it. Returns their record keys,
// fastest first.
std::vector<std::string> pick_finalists(const std::map<std::string, Trial>& recorded,
                                        const std::map<std::string, std::string>& presets,
                                        const std::set<std::string>& confirmed, size_t count);

// One outcome from a finalist's rounds: the first failure, or the median of
// the rounds' medians with the extremes of all runs.
Outcome combine_rounds(const std::vector<Outcome>& rounds);

}  // namespace attnforge::autotune
