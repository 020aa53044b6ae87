// Schedules of the backward pass (algorithm/backward_form.h). The naive one
// computes every stage at root, nothing vectorized or parallel: the baseline
// the tuned backward schedules are measured against.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/backward_form.h"

namespace attnforge::schedules {

void apply_naive_backward(const BackwardFuncs& funcs);

}  // namespace attnforge::schedules
