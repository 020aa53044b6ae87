#include "tiled_forms.h"

#include "attention_terms.h"

namespace attnforge {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;

// q * scale for query tile `it`, transposed so rows are innermost; rows past
// Lq read the last row (their results are never stored).
void define_query_tile(QueryTileFuncs& f, const AttentionInputs& in, const AttentionVars& v,
                       const TileVars& t, int query_tile) {
  Expr i = Halide::min(t.it * query_tile + t.ii, in.q_len - 1);
  f.q_tile(t.ii, v.d, t.it, v.h, v.b) = AttentionTerms::to_f32(in.q(v.d, i, v.h, v.b)) * in.scale;
}

// Keys past Lk (a partial last block) read the last key and are masked.
Expr clamped_key(const Expr& j, const AttentionInputs& in) {
  return Halide::min(j, in.kv_len - 1);
}

// The masked logit of query i and key j, both possibly past their tensors'
// ends (a partial tile or block): read at clamped positions, masked past Lk.
Expr tile_logit(const AttentionTerms& terms, const AttentionInputs& in, const Expr& dot,
                const Expr& j, const Expr& i, const Expr& h, const Expr& b, bool partial_keys) {
  Expr value = terms.masked_logit(dot, clamped_key(j, in), Halide::min(i, in.q_len - 1), h, b);
  if (partial_keys) value = Halide::select(j < in.kv_len, value, kMaskedLogit);
  return value;
}

}  // namespace

FusedFuncs build_fused(const AttentionSpec& spec, const AttentionInputs& inputs,
                       const AttentionVars& v, const TileVars& t, const TileShape& shape) {
  AttentionInputs in = inputs;
  FusedFuncs f;
  define_query_tile(f, in, v, t, shape.query_tile);
  in.scale = 1.0f;  // q_tile carries the scale
  AttentionTerms terms(spec, in);
  const Expr kvh = terms.kv_head(v.h);
  const Expr i = t.it * shape.query_tile + t.ii;
  const Expr first = t.it * shape.query_tile;
  const Expr last = Halide::min(first + shape.query_tile, in.q_len) - 1;

  f.over_dim = RDom(0, spec.head_dim, "over_dim");
  f.over_keys = RDom(0, in.kv_len, "over_keys");
  if (shape.skip_masked_blocks) {
    f.over_keys.where(f.over_keys.x >= terms.key_range_begin(first, v.b) &&
                      f.over_keys.x < terms.key_range_end(last, v.b));
  }
  const Halide::RVar rd = f.over_dim.x, rk = f.over_keys.x;

  f.scores(t.ii, v.j, t.it, v.h, v.b) = 0.0f;
  f.scores(t.ii, v.j, t.it, v.h, v.b) +=
      f.q_tile(t.ii, rd, t.it, v.h, v.b) *
      AttentionTerms::to_f32(in.k(rd, clamped_key(v.j, in), kvh, v.b));
  f.logits(t.ii, v.j, t.it, v.h, v.b) =
      tile_logit(terms, in, f.scores(t.ii, v.j, t.it, v.h, v.b), v.j, i, v.h, v.b, true);
  f.row_max(t.ii, t.it, v.h, v.b) = kMaskedLogit;
  f.row_max(t.ii, t.it, v.h, v.b) =
      Halide::max(f.row_max(t.ii, t.it, v.h, v.b), f.logits(t.ii, rk, t.it, v.h, v.b));
  f.probs(t.ii, v.j, t.it, v.h, v.b) =
      Halide::exp(f.logits(t.ii, v.j, t.it, v.h, v.b) - f.row_max(t.ii, t.it, v.h, v.b));
  f.row_sum(t.ii, t.it, v.h, v.b) = 0.0f;
  f.row_sum(t.ii, t.it, v.h, v.b) += f.probs(t.ii, rk, t.it, v.h, v.b);
  f.pv_sum(v.d, t.ii, t.it, v.h, v.b) = 0.0f;
  f.pv_sum(v.d, t.ii, t.it, v.h, v.b) +=
      f.probs(t.ii, rk, t.it, v.h, v.b) * AttentionTerms::to_f32(in.v(v.d, rk, kvh, v.b));
  f.pv(v.d, t.ii, t.it, v.h, v.b) = f.pv_sum(v.d, t.ii, t.it, v.h, v.b);

  Expr ii = v.i % shape.query_tile, it = v.i / shape.query_tile;
  Expr row_max = f.row_max(ii, it, v.h, v.b);
  f.output(v.d, v.i, v.h, v.b) = terms.to_storage(
      Halide::select(AttentionTerms::row_has_keys(row_max),
                     f.pv(v.d, ii, it, v.h, v.b) / f.row_sum(ii, it, v.h, v.b), 0.0f));
  return f;
}

OnlineFuncs build_online(const AttentionSpec& spec, const AttentionInputs& inputs,
                         const AttentionVars& v, const TileVars& t, const TileShape& shape) {
  AttentionInputs in = inputs;
  OnlineFuncs f;
  define_query_tile(f, in, v, t, shape.query_tile);
  in.scale = 1.0f;  // q_tile carries the scale
  AttentionTerms terms(spec, in);
  const int KB = shape.key_block;
  const Expr kvh = terms.kv_head(v.h);
  const Expr i = t.it * shape.query_tile + t.ii;
  const Expr j = t.kb * KB + t.jj;
  const Expr first = t.it * shape.query_tile;
  const Expr last = Halide::min(first + shape.query_tile, in.q_len) - 1;
  const Expr blocks = (in.kv_len + KB - 1) / KB;

  f.over_dim = RDom(0, spec.head_dim, "over_dim");
  f.over_block = RDom(0, KB, "over_block");
  f.over_blocks = RDom(0, blocks, "over_blocks");
  if (shape.skip_masked_blocks) {
    Expr block_first = f.over_blocks.x * KB;
    f.over_blocks.where(block_first < terms.key_range_end(last, v.b) &&
                        block_first + KB > terms.key_range_begin(first, v.b));
  }
  const Halide::RVar rd = f.over_dim.x, rj = f.over_block.x, rb = f.over_blocks.x;
  const Expr key = clamped_key(j, in);

  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) = 0.0f;
  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) +=
      f.q_tile(t.ii, rd, t.it, v.h, v.b) * AttentionTerms::to_f32(in.k(rd, key, kvh, v.b));
  f.logits(t.ii, t.jj, t.kb, t.it, v.h, v.b) =
      tile_logit(terms, in, f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b), j, i, v.h, v.b, true);
  f.block_max(t.ii, t.kb, t.it, v.h, v.b) = kMaskedLogit;
  f.block_max(t.ii, t.kb, t.it, v.h, v.b) = Halide::max(f.block_max(t.ii, t.kb, t.it, v.h, v.b),
                                                        f.logits(t.ii, rj, t.kb, t.it, v.h, v.b));
  f.probs(t.ii, t.jj, t.kb, t.it, v.h, v.b) = Halide::exp(
      f.logits(t.ii, t.jj, t.kb, t.it, v.h, v.b) - f.block_max(t.ii, t.kb, t.it, v.h, v.b));
  f.block_sum(t.ii, t.kb, t.it, v.h, v.b) = 0.0f;
  f.block_sum(t.ii, t.kb, t.it, v.h, v.b) += f.probs(t.ii, rj, t.kb, t.it, v.h, v.b);
  const Expr block_key = clamped_key(t.kb * KB + rj, in);
  f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b) = 0.0f;
  f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b) +=
      f.probs(t.ii, rj, t.kb, t.it, v.h, v.b) *
      AttentionTerms::to_f32(in.v(v.d, block_key, kvh, v.b));
  f.block_pv(v.d, t.ii, t.kb, t.it, v.h, v.b) = f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b);

  // Running state; max and sum are repeated in every head-dim lane so the
  // update needs no cycle between Funcs. One of the two rescale factors is
  // exactly 1, so each lane takes one exp.
  f.state(v.d, t.ii, t.it, v.h, v.b) = {0.0f, kMaskedLogit, 0.0f};
  Expr acc = f.state(v.d, t.ii, t.it, v.h, v.b)[0];
  Expr run_max = f.state(v.d, t.ii, t.it, v.h, v.b)[1];
  Expr run_sum = f.state(v.d, t.ii, t.it, v.h, v.b)[2];
  Expr bmax = f.block_max(t.ii, rb, t.it, v.h, v.b);
  Expr shrink = Halide::exp(-Halide::abs(run_max - bmax));
  Expr keep_old = run_max >= bmax;
  Expr old_factor = Halide::select(keep_old, 1.0f, shrink);
  Expr new_factor = Halide::select(keep_old, shrink, 1.0f);
  f.state(v.d, t.ii, t.it, v.h, v.b) = {
      acc * old_factor + f.block_pv(v.d, t.ii, rb, t.it, v.h, v.b) * new_factor,
      Halide::max(run_max, bmax),
      run_sum * old_factor + f.block_sum(t.ii, rb, t.it, v.h, v.b) * new_factor};

  Expr ii = v.i % shape.query_tile, it = v.i / shape.query_tile;
  Halide::FuncRef final_state = f.state(v.d, ii, it, v.h, v.b);
  f.output(v.d, v.i, v.h, v.b) =
      terms.to_storage(Halide::select(AttentionTerms::row_has_keys(Expr(final_state[1])),
                                      Expr(final_state[0]) / Expr(final_state[2]), 0.0f));
  return f;
}

}  // namespace attnforge
