#include "layer_pipeline.h"

#include "layer_schedule.h"

namespace attnforge::schedules {

LayerPipeline build_layer_pipeline(const LayerSpec& spec, const LayerInputs& inputs,
                                   const Schedule& schedule) {
  LayerPipeline p;
  AttentionVars v;
  p.projections = build_projections(spec, inputs, v, schedule.projection_fuse_q);
  p.attention = build_pipeline(spec.attention, p.projections.attention, attention_part(schedule));
  p.output_projection = build_output_projection(spec, inputs, p.attention.output, p.attention.vars);
  p.attention.output = p.output_projection.heads;
  return p;
}

}  // namespace attnforge::schedules
