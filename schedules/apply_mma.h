// Schedules the tensor-core form (algorithm/mma_online_form.h): on CUDA, a
// block of gpu_threads_y warps whose lanes keep their fragments and running
// state in registers; on a CPU target, the emulated form as plain loops.
#pragma once

#include <Halide.h>

#include "attention_pipeline.h"
#include "schedule.h"

namespace attnforge::schedules {

// Whether `schedule` runs emulated on `target`: online_mma on a target
// without CUDA (the CPU checks of its indexing).
bool emulates_tensor_cores(const Schedule& schedule, const Halide::Target& target);

// The target whose rules an emulated schedule is checked by: `target` with CUDA.
Halide::Target emulated_target(const Halide::Target& target);

void apply_mma_cuda(const Schedule& schedule, AttentionPipeline& pipeline);
void apply_mma_emulated(AttentionPipeline& pipeline);

}  // namespace attnforge::schedules
