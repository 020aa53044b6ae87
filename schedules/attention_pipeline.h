// The Funcs of the form a schedule names, built from one set of inputs.
#pragma once

#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/materialized_form.h"
#include "algorithm/mma_online_form.h"
#include "algorithm/tiled_forms.h"
#include "schedule.h"

namespace attnforge::schedules {

struct AttentionPipeline {
  Form form = Form::materialized;
  MaterializedFuncs materialized;
  FusedFuncs fused;
  OnlineFuncs online;
  MmaOnlineFuncs mma;
  MmaOnlineVars mma_vars;
  AttentionVars vars;
  TileVars tile_vars;
  AttentionInputs inputs;     // what the form reads, for schedules that stage inputs
  int grouped_heads = 1;      // TileShape::grouped_heads of the tiled forms
  int interleaved_lanes = 0;  // TileShape::interleaved_lanes of the online form
  // The stages to schedule as outputs: the form's output (and weights), or
  // the Generator's Outputs that wrap them.
  Halide::Func output;
  Halide::Func weights;
};

// Builds the form `schedule` names; its tile sizes shape the fused and online
// forms. online_mma: `emulated_mma`, its mma and shuffles emulated (a CPU
// target); `storage_bits`, its bf16 tensors are their 16 bits (MmaTileShape).
// bf16 dot products: `native_bf16_rounding`, rounded to bf16 by the
// instruction (TileShape::native_bf16_rounding; see has_native_bf16_rounding).
AttentionPipeline build_pipeline(const AttentionSpec& spec, const AttentionInputs& inputs,
                                 const Schedule& schedule, bool emulated_mma = false,
                                 bool storage_bits = false, bool native_bf16_rounding = false);

}  // namespace attnforge::schedules
