// Turns one layer Schedule into Halide directives on an x86 CPU target, or
// gives a layer the naive schedule (every stage at root, nothing else).
#pragma once

#include <Halide.h>

#include "layer_pipeline.h"
#include "schedule.h"
#include "spec/layer_spec.h"

namespace attnforge::schedules {

// The schedule must already have passed validate_layer() for this spec and target.
void apply_layer_x86(const Schedule& schedule, LayerPipeline& pipeline, const LayerSpec& spec);

// For a pipeline built in the materialized form.
void apply_layer_naive(LayerPipeline& pipeline, const Halide::Target& target);

}  // namespace attnforge::schedules
