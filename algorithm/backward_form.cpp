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
  f.over_keys = Halide::RDom(0, in.kv_len, "over_keys");
  const Halide::Expr kvh = terms.kv_head(v.h);

  // Positions past Lq or Lk read the last row or key, as in the forward forms.
  const Halide::Expr row = Halide::min(v.i, in.q_len - 1);
  const Halide::Expr key = Halide::min(v.j, in.kv_len - 1);
  f.q_rows(v.d, v.i, v.h, v.b) = AttentionTerms::to_f32(in.q(v.d, row, v.h, v.b));
  f.k_heads(v.d, v.j, v.h, v.b) = AttentionTerms::to_f32(in.k(v.d, key, v.h, v.b));
  f.v_heads(v.d, v.j, v.h, v.b) = AttentionTerms::to_f32(in.v(v.d, key, v.h, v.b));
  f.k_rows(v.d, v.j, v.h, v.b) = f.k_heads(v.d, v.j, kvh, v.b);
  f.v_rows(v.d, v.j, v.h, v.b) = f.v_heads(v.d, v.j, kvh, v.b);
  f.d_out_rows(v.d, v.i, v.h, v.b) = AttentionTerms::to_f32(g.d_out(v.d, row, v.h, v.b));

  if (blocks.bf16_pairs) {
    const Halide::Var p = f.pair, dh = f.half;
    const Halide::Expr d = 2 * dh + p;
    f.q_pairs(p, v.i, dh, v.h, v.b) = in.q(d, row, v.h, v.b);
    f.k_pairs(p, v.j, dh, v.h, v.b) = in.k(d, key, kvh, v.b);
    f.v_pairs(p, v.j, dh, v.h, v.b) = in.v(d, key, kvh, v.b);
    f.d_out_pairs(p, v.i, dh, v.h, v.b) = g.d_out(d, row, v.h, v.b);
    f.over_dim = Halide::RDom({{0, 2}, {0, spec.head_dim / 2}}, "over_dim");
  } else {
    f.over_dim = Halide::RDom(0, spec.head_dim, "over_dim");
  }
  const Halide::RDom dims(0, spec.head_dim, "dims");
  f.out_dots(v.i, v.h, v.b) = 0.0f;
  f.out_dots(v.i, v.h, v.b) +=
      f.d_out_rows(dims, v.i, v.h, v.b) * AttentionTerms::to_f32(g.out(dims, row, v.h, v.b));

  // q.k, dO.v, P and the loss's slope by the logit, into `t`.
  auto define_logit_gradient = [&](LogitGradient& t) {
    t.scores(v.j, v.i, v.h, v.b) = 0.0f;
    t.d_probs(v.j, v.i, v.h, v.b) = 0.0f;
    if (blocks.bf16_pairs) {
      const Halide::RVar rp = f.over_dim.x, rh = f.over_dim.y;
      auto dot = [&](Halide::Func rows, Halide::Func keys) {
        return AttentionTerms::to_f32(rows(rp, v.i, rh, v.h, v.b)) *
               AttentionTerms::to_f32(keys(rp, v.j, rh, v.h, v.b));
      };
      t.scores(v.j, v.i, v.h, v.b) += dot(f.q_pairs, f.k_pairs);
      t.d_probs(v.j, v.i, v.h, v.b) += dot(f.d_out_pairs, f.v_pairs);
    } else {
      const Halide::RVar rd = f.over_dim.x;
      t.scores(v.j, v.i, v.h, v.b) += f.q_rows(rd, v.i, v.h, v.b) * f.k_rows(rd, v.j, v.h, v.b);
      t.d_probs(v.j, v.i, v.h, v.b) +=
          f.d_out_rows(rd, v.i, v.h, v.b) * f.v_rows(rd, v.j, v.h, v.b);
    }
    const Halide::Expr scaled = t.scores(v.j, v.i, v.h, v.b) * in.scale;
    const Halide::Expr logit = terms.masked_logit(scaled, key, row, v.h, v.b);
    // logit <= lse; a row that sees no key has lse = +inf, so all its P are 0.
    // The clamp keeps -inf out of the exponential.
    t.probs(v.j, v.i, v.h, v.b) =
        softmax_exp(Halide::max(logit - g.lse(row, v.h, v.b), -100.0f), 0.0f);
    t.d_logits(v.j, v.i, v.h, v.b) =
        t.probs(v.j, v.i, v.h, v.b) * (t.d_probs(v.j, v.i, v.h, v.b) - f.out_dots(v.i, v.h, v.b));
  };
  LogitGradient main{f.scores, f.d_probs, f.probs, f.d_logits};
  define_logit_gradient(main);
  const Halide::Expr scaled = f.scores(v.j, v.i, v.h, v.b) * in.scale;
  f.d_scores(v.j, v.i, v.h, v.b) =
      f.d_logits(v.j, v.i, v.h, v.b) * terms.logit_slope(scaled) * in.scale;
  // A bias is added to the logit after the softcap: its gradient is the logit's.
  define_logit_gradient(f.bias_terms);
  f.d_bias(v.j, v.i, v.h, v.b) = terms.to_storage(f.bias_terms.d_logits(v.j, v.i, v.h, v.b));

  // dQ per query block, over the keys its queries may see.
  const int QB = blocks.queries, KB = blocks.keys;
  const Halide::Var ii = f.query_in_block, qb = f.query_block;
  const Halide::Expr query = qb * QB + ii;
  const Halide::Expr key_begin = terms.key_range_begin(qb * QB, v.b) / KB * KB;
  const Halide::Expr key_end =
      terms.key_range_end(Halide::min(qb * QB + QB - 1, in.q_len - 1), v.b);
  f.dq_sum(v.d, ii, qb, v.h, v.b) = 0.0f;
  if (blocks.bf16_pairs) {
    // Over pairs of keys 2 kh + kp: dS rounded to bf16, 0 past Lk.
    const Halide::Var p = f.pair, jh = f.half;
    const Halide::Expr pair_key = 2 * jh + p;
    f.d_score_key_pairs(p, v.i, jh, v.h, v.b) = Halide::cast(
        Halide::BFloat(16),
        Halide::select(pair_key < in.kv_len, f.d_scores(pair_key, v.i, v.h, v.b), 0.0f));
    f.k_key_pairs(p, v.d, jh, v.h, v.b) = in.k(v.d, Halide::min(pair_key, in.kv_len - 1), kvh, v.b);
    f.over_keys = Halide::RDom({{0, 2}, {0, (in.kv_len + 1) / 2}}, "over_keys");
    const Halide::RVar kp = f.over_keys.x, kh = f.over_keys.y;
    f.over_keys.where(kh >= key_begin / 2 && kh < (key_end + 1) / 2);
    f.dq_sum(v.d, ii, qb, v.h, v.b) +=
        AttentionTerms::to_f32(f.d_score_key_pairs(kp, query, kh, v.h, v.b)) *
        AttentionTerms::to_f32(f.k_key_pairs(kp, v.d, kh, v.h, v.b));
  } else {
    const Halide::RVar rk = f.over_keys.x;
    f.over_keys.where(rk >= key_begin && rk < key_end);
    f.dq_sum(v.d, ii, qb, v.h, v.b) +=
        f.d_scores(rk, query, v.h, v.b) * f.k_rows(v.d, rk, v.h, v.b);
  }
  f.dq(v.d, v.i, v.h, v.b) = terms.to_storage(f.dq_sum(v.d, v.i % QB, v.i / QB, v.h, v.b));

  // dK and dV per key block of KV head v.h, over its query heads
  // v.h * group + rg and the queries that may see the block.
  const Halide::Var jj = f.key_in_block, kb = f.key_block;
  const Halide::Expr block_key = kb * KB + jj;
  const KeyRange<Halide::Expr> queries =
      terms.query_range(kb * KB, Halide::min(kb * KB + KB - 1, in.kv_len - 1), v.b);
  const Halide::Expr query_begin = queries.begin / QB * QB;
  f.key_sums(v.d, jj, kb, v.h, v.b) = {0.0f, 0.0f};
  const Halide::Tuple sum = f.key_sums(v.d, jj, kb, v.h, v.b);
  if (blocks.bf16_pairs) {
    // Over pairs of queries 2 qh + qp: dS and P rounded to bf16, 0 past Lq.
    const Halide::Var p = f.pair, ih = f.half;
    const Halide::Expr pair_query = 2 * ih + p, pair_row = Halide::min(pair_query, in.q_len - 1);
    auto rounded = [&](Halide::Func values) {
      return Halide::cast(
          Halide::BFloat(16),
          Halide::select(pair_query < in.q_len, values(v.j, pair_query, v.h, v.b), 0.0f));
    };
    f.d_score_query_pairs(p, v.j, ih, v.h, v.b) = rounded(f.d_scores);
    f.prob_query_pairs(p, v.j, ih, v.h, v.b) = rounded(f.probs);
    f.q_query_pairs(p, v.d, ih, v.h, v.b) = in.q(v.d, pair_row, v.h, v.b);
    f.d_out_query_pairs(p, v.d, ih, v.h, v.b) = g.d_out(v.d, pair_row, v.h, v.b);
    f.over_queries = Halide::RDom({{0, 2}, {0, (in.q_len + 1) / 2}, {0, group}}, "over_queries");
    const Halide::RVar qp = f.over_queries.x, qh = f.over_queries.y, rg = f.over_queries.z;
    f.over_queries.where(qh >= query_begin / 2 && qh < (queries.end + 1) / 2);
    const Halide::Expr head = v.h * group + rg;
    auto term = [&](Halide::Func key_side, Halide::Func row_side) {
      return AttentionTerms::to_f32(key_side(qp, block_key, qh, head, v.b)) *
             AttentionTerms::to_f32(row_side(qp, v.d, qh, head, v.b));
    };
    f.key_sums(v.d, jj, kb, v.h, v.b) = {sum[0] + term(f.d_score_query_pairs, f.q_query_pairs),
                                         sum[1] + term(f.prob_query_pairs, f.d_out_query_pairs)};
  } else {
    f.over_queries = Halide::RDom(0, in.q_len, 0, group, "over_queries");
    const Halide::RVar ri = f.over_queries.x, rg = f.over_queries.y;
    f.over_queries.where(ri >= query_begin && ri < queries.end);
    const Halide::Expr head = v.h * group + rg;
    f.key_sums(v.d, jj, kb, v.h, v.b) = {
        sum[0] + f.d_scores(block_key, ri, head, v.b) * f.q_rows(v.d, ri, head, v.b),
        sum[1] + f.probs(block_key, ri, head, v.b) * f.d_out_rows(v.d, ri, head, v.b)};
  }
  const Halide::Tuple sums = f.key_sums(v.d, v.j % KB, v.j / KB, v.h, v.b);
  f.dk(v.d, v.j, v.h, v.b) = terms.to_storage(sums[0]);
  f.dv(v.d, v.j, v.h, v.b) = terms.to_storage(sums[1]);
  return f;
}

}  // namespace attnforge
