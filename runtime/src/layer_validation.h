// Checks one MHA layer call's arguments against each other and derives the
// spec of the layer kernel it needs. Every error names the argument, the
// expected and the given value.
#pragma once

#include "attnforge/mha_layer.h"
#include "spec/layer_spec.h"

namespace attnforge::runtime {

struct ValidatedLayerCall {
  LayerSpec spec;  // the layer kernel this call needs
  int batch = 0, q_len = 0, kv_len = 0;
  float scale = 0.0f;
  bool empty = false;  // B == 0 or Lq == 0: nothing to compute
};

// x_kv: null for self-attention.
Status validate_layer_call(const TensorView& x_q, const TensorView* x_kv,
                           const LayerParameters& parameters, const TensorView& out,
                           const LayerOptions& options, ValidatedLayerCall* call);

}  // namespace attnforge::runtime
