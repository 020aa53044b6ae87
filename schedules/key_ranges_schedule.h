// The schedule of a mask rule's key-range table (algorithm/modifier_key_ranges.h):
// rows in parallel, each row's keys a vector of lanes at a time.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/modifier_key_ranges.h"

namespace attnforge::schedules {

// `output` is the stage that stores f.ranges (the Generator's Output).
void schedule_key_ranges(ModifierKeyRanges& f, const AttentionVars& v, Halide::Func output,
                         const Halide::Target& target);

}  // namespace attnforge::schedules
