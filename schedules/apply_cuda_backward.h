// The GPU row form of the backward pass (CUDA and OpenCL), the x86 form's two
// passes (backward_schedule.h) with a thread per row:
// - dK and dV: a block per key_block keys of a KV head, a thread per key. Its
//   K and V rows and its dK and dV sums stay in the thread; every thread of
//   a block walks the same queries, so their Q and dO rows are read at one
//   address by the whole warp.
// - dQ: a block per query_block queries, a thread per query, walking keys
//   the same way.
// P and dS are recomputed per (query, key) in the thread; no atomics, so
// results do not depend on the launch.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/backward_form.h"
#include "apply_x86_backward.h"
#include "backward_schedule.h"

namespace attnforge::schedules {

void apply_cuda_backward(const BackwardSchedule& schedule, const BackwardFuncs& funcs,
                         BackwardOutputs outputs, const AttentionVars& vars, bool softcap);

}  // namespace attnforge::schedules
