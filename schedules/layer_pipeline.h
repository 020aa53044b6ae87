// The Funcs of a whole layer a schedule names: projections, the attention in
// the schedule's form, the output projection and the weights.
#pragma once

#include <Halide.h>

#include "algorithm/layer_form.h"
#include "attention_pipeline.h"
#include "schedule.h"

namespace attnforge::schedules {

struct LayerPipeline {
  LayerProjections projections;
  // Its output is output_projection.heads, the stage the attention's schedule tiles.
  AttentionPipeline attention;
  OutputProjection output_projection;
  // The stages to schedule as outputs: (m, i, b), and the weights, (j, i, h, b)
  // per head or (j, i, b) averaged; the Generator's Outputs that wrap
  // output_projection.output and attention.weights (or its average).
  Halide::Func output;
  Halide::Func weights;
};

// Builds the form `schedule` names (materialized for a naive schedule); Q gets
// its own projection when the schedule computes it per query tile.
LayerPipeline build_layer_pipeline(const LayerSpec& spec, const LayerInputs& inputs,
                                   const Schedule& schedule);

}  // namespace attnforge::schedules
