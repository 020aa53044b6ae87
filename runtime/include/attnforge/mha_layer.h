// A whole multi-head attention layer with the emitted layer kernels, as
// torch.nn.MultiheadAttention computes it (batch_first):
//   q = x_q W_q + b_q, k = x_kv W_k + b_k, v = x_kv W_v + b_v (per head),
//   out = concat_h(attention(q_h, k_h, v_h)) W_o + b_o
// x_q: [B, Lq, d_model]; x_kv: [B, Lk, d_model] (self-attention: x_q itself);
// out: [B, Lq, d_model]. Weights are [in, out] (y = x W, so torch's
// in_proj_weight is the transposed [out, in] copy), biases [out]; all f32 on
// the CPU. Strides are free except the innermost, which must be 1.
#pragma once

#include "attention.h"

namespace attnforge {

// The projections' parameters. Self-attention uses w_qkv, one packed
// [d_model, (H + 2 H_kv) D] weight whose output features are W_q's, W_k's and
// W_v's in turn; cross-attention uses w_q [d_model, H D] and w_k, w_v
// [d_model, H_kv D]. Biases are all given or all null (torch's bias=False).
struct LayerParameters {
  const TensorView* w_qkv = nullptr;
  const TensorView* b_qkv = nullptr;  // [(H + 2 H_kv) D]
  const TensorView* w_q = nullptr;
  const TensorView* w_k = nullptr;
  const TensorView* w_v = nullptr;
  const TensorView* b_q = nullptr;  // [H D]
  const TensorView* b_k = nullptr;  // [H_kv D]
  const TensorView* b_v = nullptr;
  const TensorView* w_o = nullptr;  // [H D, d_model]
  const TensorView* b_o = nullptr;  // [d_model]
};

struct LayerOptions {
  int heads = 0;     // H, torch's num_heads; must divide d_model (D = d_model / H)
  int kv_heads = 0;  // H_kv for GQA/MQA projections; 0: H
  // Mask, alignment, window, key_lengths, bias ([B or 1, H or 1, Lq, Lk]),
  // alibi_slopes and scale as attention() takes them; page_table must be null
  // (the layer computes its own keys and values). attention.weights: the
  // attention weights, [B, H, Lq, Lk], or [B, Lq, Lk] with average_weights.
  AttentionOptions attention;
  bool average_weights = false;  // torch's need_weights=True, average_attn_weights=True
};

// Validates every argument, picks the best emitted layer kernel and runs it.
// On any error nothing is written to out or the weights.
Status mha_layer(const TensorView& x, const LayerParameters& parameters, const TensorView& out,
                 const LayerOptions& options);
// Cross-attention: queries from x_q, keys and values from x_kv.
Status mha_layer(const TensorView& x_q, const TensorView& x_kv, const LayerParameters& parameters,
                 const TensorView& out, const LayerOptions& options);

// The kernel mha_layer() would run for these arguments (after the same validation).
// Self-attention passes x_kv = nullptr.
Status choose_layer_kernel(const TensorView& x_q, const TensorView* x_kv,
                           const LayerParameters& parameters, const TensorView& out,
                           const LayerOptions& options, KernelChoice* choice);

}  // namespace attnforge
