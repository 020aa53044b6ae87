// The GPU row form of the backward pass (CUDA and OpenCL), the x86 form's two
// passes (backward_schedule.h) with a thread per row:
// - dK and dV: a block per key_block keys of a KV head, a thread per key
//   (per 64 elements of its head dim, past 64). Its K and V rows and its dK
//   and dV sums stay in the thread; every thread of a block walks the same
//   queries, so their Q and dO rows are read at one address by the whole warp.
// - dQ: a block per query_block queries, a thread per query, walking keys
//   the same way.
// - dBias (.dbias): a thread per (query, key) entry, recomputing its q.k and
//   dO.v, with a block's K and V rows staged.
// P and dS are recomputed per (query, key) in the thread; no atomics, so
// results do not depend on the launch.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/backward_form.h"
#include "apply_x86_backward.h"
#include "backward_schedule.h"

namespace attnforge::schedules {

// A dK/dV thread's sums of one key: past this many, a key's head dim is
// split across threads (each with 2 x this many sums), so that the sums stay
// in registers.
constexpr int kKeySumsPerThread = 64;

// Keys per block of the dBias pass, whose K and V rows it stages in shared
// memory (2 x this many rows of the head dim in f32).
constexpr int kBiasBlockKeys = 32;

// The threads per key row of the dK/dV pass at `head_dim`.
int key_row_threads(int head_dim);

void apply_cuda_backward(const BackwardSchedule& schedule, const BackwardFuncs& funcs,
                         BackwardOutputs outputs, const AttentionVars& vars, bool softcap,
                         int head_dim);

}  // namespace attnforge::schedules
