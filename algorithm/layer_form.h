// The Funcs of a multi-head attention layer around its attention: the input
// projections (GEMMs over d_model) that give the attention its q, k and v, and
// the output projection over every head's output. Algorithm only.
#pragma once

#include <Halide.h>

#include <vector>

#include "attention_inputs.h"
#include "spec/layer_spec.h"

namespace attnforge {

// The layer's tensors as Funcs. Activations are (feature, position, batch);
// a weight is (output feature, input feature), so y = x W with W [in][out] in
// row-major memory; a bias is (output feature).
struct LayerInputs {
  Halide::Func x_q, x_kv;  // x_kv is x_q for self-attention
  // Self-attention: one packed weight with the output features of W_q, W_k, W_v in turn.
  Halide::Func w_qkv, b_qkv;
  // Cross-attention: one weight per projection.
  Halide::Func w_q, w_k, w_v, b_q, b_k, b_v;
  Halide::Func w_o, b_o;  // biases are defined only with projection_bias
  Halide::Expr q_len, kv_len;
  // The attention's own extras (key lengths, bias, ALiBi slopes) and scale;
  // its q, k and v are filled in by build_projections.
  AttentionInputs attention;
};

// One projection to heads: out(d, i, h, b) = bias + sum_c x(c, i, b) W(c, (first + h) D + d).
struct Projection {
  Halide::Func sum;  // (d, i, h, b) the reduction over d_model
  Halide::Func out;  // (d, i, h, b) with the bias; what the attention reads
  Halide::RDom over_model;
  int heads = 0;  // extent of h
};

struct LayerProjections {
  // The projections to compute: for self-attention one packed QKV projection,
  // or Q and a packed KV when Q is computed per query tile; for
  // cross-attention Q, K and V.
  std::vector<Projection> all;
  int query = 0;              // the index in `all` of the projection that gives q
  AttentionInputs attention;  // inputs.attention with q, k, v reading the projections
};

// separate_query: give Q a projection of its own even for self-attention, so
// that it can be computed where the attention reads it.
LayerProjections build_projections(const LayerSpec& spec, const LayerInputs& inputs,
                                   const AttentionVars& v, bool separate_query);

struct OutputProjection {
  Halide::Func heads;   // (d, i, h, b) the attention's output, one stage to store
  Halide::Func sum;     // (m, i, b) the reduction over H D
  Halide::Func output;  // (m, i, b) with the bias
  Halide::RDom over_features;
  Halide::Var m{"m"};
};

// `attention` is the attention's output (d, i, h, b).
OutputProjection build_output_projection(const LayerSpec& spec, const LayerInputs& inputs,
                                         const Halide::Func& attention, const AttentionVars& v);

// need_weights' average over heads: (j, i, b) from per-head weights (j, i, h, b).
Halide::Func average_over_heads(const LayerSpec& spec, const Halide::Func& weights,
                                const AttentionVars& v);

}  // namespace attnforge
