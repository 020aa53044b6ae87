// Turns one Schedule into Halide directives on an x86 CPU target.
#pragma once

#include <Halide.h>

#include "attention_pipeline.h"
#include "schedule.h"

namespace attnforge::schedules {

// The schedule must already have passed validate() for this spec and target.
// Returns the loop over query tiles where a tile's work is computed (root for
// the materialized form), so a producer of q can be placed there too.
Halide::LoopLevel apply_x86(const Schedule& schedule, AttentionPipeline& pipeline, int head_dim);

}  // namespace attnforge::schedules
