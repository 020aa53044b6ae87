// The x86 backward schedule (backward_schedule.h says its loop order) applied
// to the backward algorithm and the Generator's three outputs.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/backward_form.h"
#include "backward_schedule.h"

namespace attnforge::schedules {

struct BackwardOutputs {
  Halide::Func dq, dk, dv;
  Halide::Func d_bias;  // .dbias only, else undefined
};

void apply_x86_backward(const BackwardSchedule& schedule, const BackwardFuncs& funcs,
                        BackwardOutputs outputs, const AttentionVars& vars, bool softcap);

}  // namespace attnforge::schedules
