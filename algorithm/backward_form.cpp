#include "backward_form.h"

#include "attention_terms.h"
#include "softmax_exp.h"

namespace attnforge {

BackwardFuncs build_backward(const AttentionSpec& spec, const AttentionInputs& in,
                             const GradientInputs& g, const AttentionVars& v,
                             const BackwardBlocks& blocks) {
  AttentionTerms terms(spec, in);
  BackwardFuncs f;
  const int group = spec.group_size();
  f.over_dim = Halide::RDom(0, spec.head_dim, "over_dim");
  f.over_keys = Halide::RDom(0, in.kv_len, "over_keys");
  f.over_queries = Halide::RDom(0, in.q_len, 0, group, "over_queries");
  const Halide::RVar rd = f.over_dim.x, rk = f.over_keys.x;
  const Halide::RVar ri = f.over_queries.x, rg = f.over_queries.y;
  const Halide::Expr kvh = terms.kv_head(v.h);

  // Positions past Lq or Lk read the last row or key, as in the forward forms.
  const Halide::Expr row = Halide::min(v.i, in.q_len - 1);
  const Halide::Expr key = Halide::min(v.j, in.kv_len - 1);
  f.q_rows(v.d, v.i, v.h, v.b) = AttentionTerms::to_f32(in.q(v.d, row, v.h, v.b));
  f.k_rows(v.d, v.j, v.h, v.b) = AttentionTerms::to_f32(in.k(v.d, key, kvh, v.b));
  f.v_rows(v.d, v.j, v.h, v.b) = AttentionTerms::to_f32(in.v(v.d, key, kvh, v.b));
  f.d_out_rows(v.d, v.i, v.h, v.b) = AttentionTerms::to_f32(g.d_out(v.d, row, v.h, v.b));

  f.scores(v.j, v.i, v.h, v.b) = 0.0f;
  f.scores(v.j, v.i, v.h, v.b) += f.q_rows(rd, v.i, v.h, v.b) * f.k_rows(rd, v.j, v.h, v.b);
  const Halide::Expr scaled = f.scores(v.j, v.i, v.h, v.b) * in.scale;
  const Halide::Expr logit = terms.masked_logit(scaled, key, row, v.h, v.b);
  // logit <= lse; a row that sees no key has lse = +inf, so all its P are 0.
  // The clamp keeps -inf out of the exponential.
  f.probs(v.j, v.i, v.h, v.b) =
      softmax_exp(Halide::max(logit - g.lse(row, v.h, v.b), -100.0f), 0.0f);

  f.d_probs(v.j, v.i, v.h, v.b) = 0.0f;
  f.d_probs(v.j, v.i, v.h, v.b) += f.d_out_rows(rd, v.i, v.h, v.b) * f.v_rows(rd, v.j, v.h, v.b);
  f.out_dots(v.i, v.h, v.b) = 0.0f;
  f.out_dots(v.i, v.h, v.b) +=
      f.d_out_rows(rd, v.i, v.h, v.b) * AttentionTerms::to_f32(g.out(rd, row, v.h, v.b));

  const Halide::Expr p = f.probs(v.j, v.i, v.h, v.b);
  f.d_scores(v.j, v.i, v.h, v.b) = p * (f.d_probs(v.j, v.i, v.h, v.b) - f.out_dots(v.i, v.h, v.b)) *
                                   terms.logit_slope(scaled) * in.scale;

  // dQ per query block, over the keys its queries may see.
  const int QB = blocks.queries, KB = blocks.keys;
  const Halide::Var ii = f.query_in_block, qb = f.query_block;
  const Halide::Expr query = qb * QB + ii;
  const Halide::Expr key_begin = terms.key_range_begin(qb * QB, v.b);
  const Halide::Expr key_end =
      terms.key_range_end(Halide::min(qb * QB + QB - 1, in.q_len - 1), v.b);
  f.over_keys.where(rk >= key_begin / KB * KB && rk < key_end);
  f.dq_sum(v.d, ii, qb, v.h, v.b) = 0.0f;
  f.dq_sum(v.d, ii, qb, v.h, v.b) += f.d_scores(rk, query, v.h, v.b) * f.k_rows(v.d, rk, v.h, v.b);
  f.dq(v.d, v.i, v.h, v.b) = terms.to_storage(f.dq_sum(v.d, v.i % QB, v.i / QB, v.h, v.b));

  // dK and dV per key block of KV head v.h, over its query heads
  // v.h * group + rg and the queries that may see the block.
  const Halide::Var jj = f.key_in_block, kb = f.key_block;
  const Halide::Expr block_key = kb * KB + jj;
  const KeyRange<Halide::Expr> queries =
      terms.query_range(kb * KB, Halide::min(kb * KB + KB - 1, in.kv_len - 1), v.b);
  f.over_queries.where(ri >= queries.begin / QB * QB && ri < queries.end);
  const Halide::Expr head = v.h * group + rg;
  const Halide::Expr d_score = f.d_scores(block_key, ri, head, v.b);
  const Halide::Expr prob = f.probs(block_key, ri, head, v.b);
  f.key_sums(v.d, jj, kb, v.h, v.b) = {0.0f, 0.0f};
  f.key_sums(v.d, jj, kb, v.h, v.b) = {
      f.key_sums(v.d, jj, kb, v.h, v.b)[0] + d_score * f.q_rows(v.d, ri, head, v.b),
      f.key_sums(v.d, jj, kb, v.h, v.b)[1] + prob * f.d_out_rows(v.d, ri, head, v.b)};
  const Halide::Tuple sums = f.key_sums(v.d, v.j % KB, v.j / KB, v.h, v.b);
  f.dk(v.d, v.j, v.h, v.b) = terms.to_storage(sums[0]);
  f.dv(v.d, v.j, v.h, v.b) = terms.to_storage(sums[1]);
  return f;
}

}  // namespace attnforge
