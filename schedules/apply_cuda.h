// Turns one CUDA schedule into Halide GPU directives: blocks over (query
// tile, head, batch), threads over head-dim or key lanes (x) and query rows
// (y), shared memory for what a block's threads exchange, registers for what
// one thread accumulates.
#pragma once

#include "attention_pipeline.h"
#include "schedule.h"

namespace attnforge::schedules {

void apply_cuda(const Schedule& schedule, AttentionPipeline& pipeline, int head_dim);

}  // namespace attnforge::schedules
