// Schedules of the backward pass (algorithm/backward_form.h), as data.
//
// The naive one computes every stage at root, nothing vectorized or
// parallel: the baseline the tuned schedules are measured against.
//
// The GPU one (apply_cuda_backward.h) runs the same two passes with a thread
// per key and per query.
//
// The x86 one (apply_x86_backward.h) runs FlashAttention-2's loop order in
// two passes with no atomics, so its results do not depend on the threads:
// - per key block, in parallel, dK and dV summed over query blocks: each
//   block's P and dS recomputed from Q, K, V and the saved lse, never stored
//   whole;
// - per query block, in parallel, dQ summed over key blocks, P and dS
//   recomputed again.
// Memory stays O(L * D); the price is the second pass's q.k and dO.v.
#pragma once

#include <Halide.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "algorithm/attention_inputs.h"
#include "algorithm/backward_form.h"
#include "schedule.h"
#include "spec/attention_spec.h"

namespace attnforge::schedules {

// One value per knob; backward_knobs() says what each does.
struct BackwardSchedule {
  int key_block = 64;     // keys per dK/dV block, and per step of a dQ block
  int query_block = 64;   // queries per dQ block, and per step of a dK/dV block
  int vector_width = 16;  // f32 lanes
  int score_vectors = 2;  // q.k and dO.v register tiles: vectors ...
  int score_rows = 4;     // ... by rows
  int grad_vectors = 2;   // dK/dV and dQ register tiles: head-dim vectors ...
  int grad_rows = 2;      // ... by rows (keys for dK/dV, queries for dQ)
  int bf16_dots = 0;      // 1: q.k and dO.v as bf16 dot products (bf16 storage, AVX512_BF16)
  int gpu = 0;            // 1: the GPU row form (apply_cuda_backward.h)

  nlohmann::json to_json() const;
  // Throws ScheduleError naming the first unknown or ill-typed field.
  static BackwardSchedule from_json(const nlohmann::json& json);
};

struct BackwardKnob {
  const char* name;
  int BackwardSchedule::*field;
  const char* meaning;
  std::vector<int> searched;  // the values a search tries
};

// Every knob, in JSON order.
const std::vector<BackwardKnob>& backward_knobs();

// Hand-tuned backward schedules, the most preferred first where several fit:
// backward_bf16_avx512 (bf16 on AVX512_BF16), backward_avx512, backward_avx2;
// backward_rows_gpu on CUDA and OpenCL targets.
std::vector<std::string> backward_preset_names();
// Throws ScheduleError (field "preset") for an unknown name.
BackwardSchedule load_backward_preset(const std::string& name);

// A Generator's `schedule` parameter: a backward preset's name or schedule
// JSON. Throws ScheduleError for anything else.
BackwardSchedule resolve_backward_schedule(const std::string& choice);

// Why the schedule cannot run spec on target, naming the knob; nullopt if it can.
std::optional<ScheduleError> check_backward(const BackwardSchedule& schedule,
                                            const AttentionSpec& spec,
                                            const Halide::Target& target);

// The dK/dV and dQ tiles' head-dim vectors: grad_vectors, or fewer where the
// head dim has fewer or they do not divide it.
int effective_grad_vectors(const BackwardSchedule& schedule, int head_dim);

void apply_naive_backward(const BackwardFuncs& funcs);

}  // namespace attnforge::schedules
