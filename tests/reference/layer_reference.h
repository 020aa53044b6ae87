// A multi-head attention layer computed the plain way, in double: projections
// by loops, the attention by the attention reference, the output projection.
#pragma once

#include <vector>

#include "attention_reference.h"
#include "spec/layer_spec.h"

namespace attnforge::reference {

struct LayerProblem {
  LayerSpec spec;
  // Shape, scale and the attention's extras (key lengths, bias, ALiBi); its
  // q, k and v are ignored: they come from the projections.
  Problem attention;
  std::vector<double> x_q, x_kv;           // [B][L][d_model]; x_kv is x_q for self-attention
  std::vector<double> w_q, w_k, w_v, w_o;  // [in][out]
  std::vector<double> b_q, b_k, b_v, b_o;  // [out]; empty without projection_bias
};

struct LayerResult {
  std::vector<double> out;      // [B][Lq][d_model]
  std::vector<double> weights;  // [B][H][Lq][Lk], or [B][Lq][Lk] averaged over heads
};

LayerResult layer(const LayerProblem& problem);

}  // namespace attnforge::reference
