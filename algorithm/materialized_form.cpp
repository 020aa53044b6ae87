#include "materialized_form.h"

#include "attention_terms.h"
#include "softmax_exp.h"

namespace attnforge {

MaterializedFuncs build_materialized(const AttentionSpec& spec, const AttentionInputs& in,
                                     const AttentionVars& v) {
  AttentionTerms terms(spec, in);
  MaterializedFuncs f;
  f.over_dim = Halide::RDom(0, spec.head_dim, "over_dim");
  f.over_keys = Halide::RDom(0, in.kv_len, "over_keys");
  const Halide::RVar rd = f.over_dim.x;
  const Halide::RVar rk = f.over_keys.x;
  const Halide::Expr kvh = terms.kv_head(v.h);

  // Positions past Lq or Lk read the last row or key: a schedule may compute
  // a few unused values past the edge (whole GPU thread tiles) but never
  // reads outside the inputs.
  const Halide::Expr row = Halide::min(v.i, in.q_len - 1);
  const Halide::Expr key = Halide::min(v.j, in.kv_len - 1);
  f.q_rows(v.d, v.i, v.h, v.b) = AttentionTerms::to_f32(in.q(v.d, row, v.h, v.b));
  f.k_rows(v.d, v.j, v.h, v.b) = AttentionTerms::to_f32(in.k(v.d, key, kvh, v.b));
  f.scores(v.j, v.i, v.h, v.b) = 0.0f;
  f.scores(v.j, v.i, v.h, v.b) += f.q_rows(rd, v.i, v.h, v.b) * f.k_rows(rd, v.j, v.h, v.b);

  f.logits(v.j, v.i, v.h, v.b) =
      terms.masked_logit(f.scores(v.j, v.i, v.h, v.b) * in.scale, key, row, v.h, v.b);

  f.row_max(v.i, v.h, v.b) = kMaskedLogit;
  f.row_max(v.i, v.h, v.b) = Halide::max(f.row_max(v.i, v.h, v.b), f.logits(rk, v.i, v.h, v.b));

  f.exp_logits(v.j, v.i, v.h, v.b) =
      softmax_exp(f.logits(v.j, v.i, v.h, v.b), f.row_max(v.i, v.h, v.b));

  f.row_sum(v.i, v.h, v.b) = 0.0f;
  f.row_sum(v.i, v.h, v.b) += f.exp_logits(rk, v.i, v.h, v.b);

  f.pv(v.d, v.i, v.h, v.b) = 0.0f;
  f.pv(v.d, v.i, v.h, v.b) +=
      f.exp_logits(rk, v.i, v.h, v.b) * AttentionTerms::to_f32(in.v(v.d, rk, kvh, v.b));

  Halide::Expr has_keys = AttentionTerms::row_has_keys(f.row_max(v.i, v.h, v.b));
  Halide::Expr inv_sum = 1.0f / f.row_sum(v.i, v.h, v.b);
  f.output(v.d, v.i, v.h, v.b) = terms.row_output(
      f.pv(v.d, v.i, v.h, v.b) * inv_sum, f.row_max(v.i, v.h, v.b), f.row_sum(v.i, v.h, v.b));
  if (spec.return_weights) {
    f.weights(v.j, v.i, v.h, v.b) = terms.to_storage(
        Halide::select(has_keys, f.exp_logits(v.j, v.i, v.h, v.b) * inv_sum, 0.0f));
  }
  return f;
}

}  // namespace attnforge
