// The backward pass of attention, written once as Halide Funcs over the
// whole Lq x Lk score matrix: the probabilities recomputed from Q, K and the
// forward's row log-sum-exp, then
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dO * O)),
//   dQ = dS' K * scale,  dK = dS'^T Q * scale,
// where dS' is dS times the logit's slope (the softcap's). dK and dV sum over
// each KV head's query heads (GQA/MQA). Algorithm only, as the forward forms.
#pragma once

#include <Halide.h>

#include "attention_inputs.h"
#include "spec/attention_spec.h"

namespace attnforge {

// What the backward pass reads besides the forward's inputs: (d, i, h, b) in
// storage dtype, and (i, h, b) f32.
struct GradientInputs {
  Halide::Func out, d_out, lse;
};

// The blocks the sums run over: dK and dV per block of `keys` keys, dQ per
// block of `queries` queries, each over only the queries (keys) that may see
// its block, from a multiple of `queries` (`keys`) on. Blocks only bound the
// sums: a skipped position's probability is exactly 0.
// bf16_pairs (bf16 storage): every product over pairs, each pair one 32-bit
// element (the form of a bf16 dot product instruction): q.k and dO.v over
// pairs of head-dim elements, dK and dV over pairs of queries, dQ over pairs
// of keys, with dS and P rounded to bf16 for the last three (as
// FlashAttention's bf16 kernels round them).
struct BackwardBlocks {
  int keys = 64;
  int queries = 64;
  bool bf16_pairs = false;
};

// What the loss's slope by the logits takes: q . k, dO . v, the
// probabilities and the slope itself, each (j, i, h, b).
struct LogitGradient {
  Halide::Func scores, d_probs, probs, d_logits;
};

struct BackwardFuncs {
  Halide::Func q_rows{"q_rows"};          // (d, i, h, b) q as f32, rows past Lq read the last
  Halide::Func k_heads{"k_heads"};        // (d, j, kv head, b) k as f32, keys past Lk read the last
  Halide::Func v_heads{"v_heads"};        // (d, j, kv head, b) v likewise
  Halide::Func k_rows{"k_rows"};          // (d, j, h, b) k_heads of head h's kv head
  Halide::Func v_rows{"v_rows"};          // (d, j, h, b) v likewise
  Halide::Func d_out_rows{"d_out_rows"};  // (d, i, h, b) dO as f32
  // bf16_pairs: (pair, row, d / 2, h, b) in storage dtype, element d = 2 (d / 2) + pair.
  Halide::Func q_pairs{"q_pairs"}, k_pairs{"k_pairs"}, v_pairs{"v_pairs"};
  Halide::Func d_out_pairs{"d_out_pairs"};
  Halide::Var pair{"pair"}, half{"half"};
  // bf16_pairs, the gradients' products over pairs of rows in bf16:
  // (pair, j, i / 2, h, b) dS and P, (pair, d, i / 2, h, b) Q and dO rows of
  // queries 2 (i / 2) + pair; (pair, i, j / 2, h, b) dS, (pair, d, j / 2, h,
  // b) K rows of keys 2 (j / 2) + pair. dS and P are 0 past Lq and Lk.
  Halide::Func d_score_query_pairs{"d_score_query_pairs"}, prob_query_pairs{"prob_query_pairs"};
  Halide::Func q_query_pairs{"q_query_pairs"}, d_out_query_pairs{"d_out_query_pairs"};
  Halide::Func d_score_key_pairs{"d_score_key_pairs"}, k_key_pairs{"k_key_pairs"};
  Halide::Func scores{"scores"};      // (j, i, h, b) q . k
  Halide::Func probs{"probs"};        // (j, i, h, b) exp(logit - lse), 0 where masked
  Halide::Func d_probs{"d_probs"};    // (j, i, h, b) dO . v
  Halide::Func out_dots{"out_dots"};  // (i, h, b) rowsum(dO * O)
  Halide::Func d_logits{"d_logits"};  // (j, i, h, b) the loss's slope by the logit
  Halide::Func d_scores{"d_scores"};  // (j, i, h, b) the loss's slope by q . k
  Halide::Func d_bias{"d_bias"};      // (j, i, h, b) dBias: d_logits in storage dtype
  // dBias's own copy of the four above: its pass recomputes them, and Halide
  // 21 clones a Func into one other consumer only (the dQ pass's).
  LogitGradient bias_terms{Halide::Func("bias_scores"), Halide::Func("bias_d_probs"),
                           Halide::Func("bias_probs"), Halide::Func("bias_d_logits")};
  Halide::Func dq{"dq"};  // (d, i, h, b) storage dtype
  Halide::Func dk{"dk"};  // (d, j, kv head, b) storage dtype
  Halide::Func dv{"dv"};  // (d, j, kv head, b) storage dtype
  // The f32 sums dq, dk and dv store, per block: dq_sum (d, query in block,
  // query block, h, b); key_sums (d, key in block, key block, kv head, b), a
  // Tuple {dk, dv}: both sum over the same queries, so one loop nest computes them.
  Halide::Func dq_sum{"dq_sum"}, key_sums{"key_sums"};
  Halide::Var query_in_block{"query_in_block"}, query_block{"query_block"};
  Halide::Var key_in_block{"key_in_block"}, key_block{"key_block"};
  Halide::RDom over_dim;   // d in scores and d_probs; with bf16_pairs (pair, d / 2)
  Halide::RDom over_keys;  // j in dq_sum; with bf16_pairs (pair, j / 2)
  // (i, query head in the KV group) in key_sums; with bf16_pairs (pair, i / 2, query head)
  Halide::RDom over_queries;
};

BackwardFuncs build_backward(const AttentionSpec& spec, const AttentionInputs& inputs,
                             const GradientInputs& gradients, const AttentionVars& v,
                             const BackwardBlocks& blocks);

}  // namespace attnforge
