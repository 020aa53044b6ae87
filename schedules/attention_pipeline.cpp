#include "attention_pipeline.h"

namespace attnforge::schedules {

AttentionPipeline build_pipeline(const AttentionSpec& spec, const AttentionInputs& inputs,
                                 const Schedule& schedule) {
  AttentionPipeline p;
  p.form = schedule.form;
  p.inputs = inputs;
  TileShape shape{schedule.query_tile, schedule.key_block, schedule.skip_masked_blocks,
                  schedule.kv_splits};
  switch (schedule.form) {
    case Form::materialized:
      p.materialized = build_materialized(spec, inputs, p.vars);
      p.output = p.materialized.output;
      p.weights = p.materialized.weights;
      break;
    case Form::fused:
      p.fused = build_fused(spec, inputs, p.vars, p.tile_vars, shape);
      p.output = p.fused.output;
      break;
    case Form::online:
      p.online = build_online(spec, inputs, p.vars, p.tile_vars, shape);
      p.output = p.online.output;
      break;
  }
  return p;
}

}  // namespace attnforge::schedules
