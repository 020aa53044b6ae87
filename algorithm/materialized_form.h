// The textbook form of attention: every stage over the whole Lq x Lk score
// matrix. Algorithm only; schedules/ decides where and how each Func runs.
#pragma once

#include <Halide.h>

#include "attention_inputs.h"
#include "spec/attention_spec.h"

namespace attnforge {

struct MaterializedFuncs {
  Halide::Func q_rows{"q_rows"};          // (d, i, h, b) q as f32, rows past Lq read the last
  Halide::Func k_rows{"k_rows"};          // (d, j, h, b) k of head h's kv head as f32, likewise
  Halide::Func scores{"scores"};          // (j, i, h, b) q . k, f32
  Halide::Func logits{"logits"};          // (j, i, h, b) scaled, biased, masked
  Halide::Func row_max{"row_max"};        // (i, h, b)
  Halide::Func exp_logits{"exp_logits"};  // (j, i, h, b) exp(logit - row max)
  Halide::Func row_sum{"row_sum"};        // (i, h, b)
  Halide::Func pv{"pv"};                  // (d, i, h, b) unnormalized exp_logits . v
  Halide::Func output{"output"};          // (d, i, h, b) storage dtype, zeros for rows with no key
  Halide::Func weights{"weights"};        // (j, i, h, b) storage dtype; defined with return_weights
  Halide::RDom over_dim;                  // d in scores
  Halide::RDom over_keys;                 // j in row_max, row_sum, pv
};

MaterializedFuncs build_materialized(const AttentionSpec& spec, const AttentionInputs& inputs,
                                     const AttentionVars& v);

}  // namespace attnforge
