// The naive baseline schedule: every stage of the materialized form computed
// at root, nothing vectorized, nothing parallel. On a GPU target each stage is
// one kernel with a plain 2-D thread tile, so the same algorithm runs there.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/materialized_form.h"

namespace attnforge::schedules {

void apply_naive(const MaterializedFuncs& funcs, const AttentionVars& vars,
                 const Halide::Target& target);

}  // namespace attnforge::schedules
