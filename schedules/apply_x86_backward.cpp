#include "apply_x86_backward.h"

#include <vector>

#include "register_tile.h"

namespace attnforge::schedules {

namespace {

using Halide::Func;
using Halide::LoopLevel;
using Halide::RVar;
using Halide::TailStrategy;
using Halide::Var;

// The loops of one pass's outputs: blocks of rows (keys or queries) and the
// parallel loop over (block, head, batch).
struct PassLoops {
  Var blocks{"blocks"}, in_block{"in_block"}, block_heads{"block_heads"}, tasks{"tasks"};
};

// Splits an output's rows into blocks, vectorizes its head dim and runs
// blocks, heads and batch in parallel as one loop.
void tile_rows_in_parallel(Func out, const AttentionVars& v, const Var& rows, int block, int lanes,
                           const PassLoops& loops) {
  out.split(rows, loops.blocks, loops.in_block, block, TailStrategy::GuardWithIf)
      .reorder(v.d, loops.in_block, loops.blocks, v.h, v.b)
      .vectorize(v.d, lanes)
      .parallel(loops.blocks)
      .parallel(v.h)
      .parallel(v.b);
}

// The per-step tile of scores (x, y): q.k or dO.v by register tiles, the
// head dim in one chunk, stored for the step; `elementwise` its consumers
// (probabilities, dS), vectorized along x. Every one covers whole blocks:
// rows past Lq or Lk read clamped positions and are never summed.
struct StepTiles {
  Var x, y;
  int x_block, y_block;
};

void align(Func f, const StepTiles& t) {
  f.align_bounds(t.x, t.x_block).align_bounds(t.y, t.y_block);
}

// A product over bf16 pairs (pair, half): per register tile of the step,
// the pair innermost as one dot product instruction per vector.
void pair_register_tile(const BackwardSchedule& s, Func product, const StepTiles& t,
                        const LoopLevel& step, const Halide::RDom& over_pairs) {
  const RVar pair = over_pairs.x, half = over_pairs.y;
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  product.compute_at(step).vectorize(t.x, s.vector_width);
  product.update()
      .tile(t.x, t.y, xo, yo, xi, yi, s.vector_width * s.score_vectors, s.score_rows,
            TailStrategy::GuardWithIf)
      .reorder(pair, xi, yi, half, xo, yo)
      .atomic(true)
      .vectorize(pair)
      .vectorize(xi, s.vector_width)
      .unroll(xi)
      .unroll(yi);
}

void schedule_step(const BackwardSchedule& s, const StepTiles& t, const LoopLevel& step,
                   const std::vector<Func>& products, const Halide::RDom& over_dim, int head_dim,
                   const std::vector<Func>& elementwise) {
  for (Func product : products) {
    align(product, t);
    if (s.bf16_dots) {
      pair_register_tile(s, product, t, step, over_dim);
    } else {
      chunked_register_tile(product, t.x, t.y, over_dim.x, head_dim, s.vector_width,
                            s.score_vectors, s.score_rows, step, 1);
    }
  }
  for (Func f : elementwise) {
    align(f, t);
    f.compute_at(step).vectorize(t.x, s.vector_width);
  }
}

// A copy of rows (d, r, h, b) with r innermost, as the step tiles load them
// along r, per block of `block` rows; of bf16 pairs (pair, r, d / 2, h, b),
// already in that order, with the pairs of a row together.
void transpose_at(const BackwardSchedule& s, const BackwardFuncs& f, Func copy, const Var& rows,
                  const AttentionVars& v, int block, const LoopLevel& level) {
  copy.compute_at(level).align_bounds(rows, block);
  if (s.bf16_dots) {
    Var pair_rows("pair_rows");
    copy.fuse(f.pair, rows, pair_rows).vectorize(pair_rows, 2 * s.vector_width);
    return;
  }
  copy.reorder_storage(rows, v.d).reorder(rows, v.d).vectorize(rows, s.vector_width);
}

// Pair operands (pair, x, half, h, b) per step, a pair's two elements side by
// side along x's vectors.
void interleave_pairs_at(const BackwardSchedule& s, const BackwardFuncs& f,
                         const std::vector<Func>& operands, const Var& x, const LoopLevel& step) {
  for (Func operand : operands) {
    Var pair_x("pair_x");
    operand.compute_at(step).fuse(f.pair, x, pair_x).vectorize(pair_x, 2 * s.vector_width);
  }
}

// The head dim the q.k reduction runs over: d, or (pair, d / 2).
int head_dim_of(const Halide::RDom& over_dim) {
  int extent = 1;
  for (int n = 0; n < over_dim.dimensions(); ++n) {
    extent *= over_dim[n].extent().as<Halide::Internal::IntImm>()->value;
  }
  return extent;
}

// dBias, a third pass: in parallel over (query block, head, batch), per
// step of key_block keys, q.k and dO.v once more as the dK/dV pass computes
// them, then the step's dlogit written out.
void schedule_bias_pass(const BackwardSchedule& s, BackwardFuncs f, Func d_bias,
                        const AttentionVars& v, int head_dim) {
  Func logits = f.bias_terms.d_logits, probs = f.bias_terms.probs;
  Func d_probs = f.bias_terms.d_probs, dots = f.bias_terms.scores;
  Var query_blocks("query_blocks"), in_block("in_block"), key_steps("key_steps"), step("step");
  d_bias.split(v.i, query_blocks, in_block, s.query_block, TailStrategy::GuardWithIf)
      .split(v.j, key_steps, step, s.key_block, TailStrategy::GuardWithIf)
      .reorder(step, in_block, key_steps, query_blocks, v.h, v.b)
      .vectorize(step, s.vector_width)
      .parallel(query_blocks)
      .parallel(v.h)
      .parallel(v.b);
  const LoopLevel key_step(d_bias, key_steps);
  Func k_in = s.bf16_dots ? f.k_pairs : f.k_rows, v_in = s.bf16_dots ? f.v_pairs : f.v_rows;
  transpose_at(s, f, k_in.in(dots), v.j, v, s.key_block, key_step);
  transpose_at(s, f, v_in.in(d_probs), v.j, v, s.key_block, key_step);
  schedule_step(s, {v.j, v.i, s.key_block, s.query_block}, key_step, {dots, d_probs}, f.over_dim,
                head_dim, {probs, logits});
}

}  // namespace

void apply_x86_backward(const BackwardSchedule& s, const BackwardFuncs& funcs,
                        BackwardOutputs outputs, const AttentionVars& v, bool softcap) {
  BackwardFuncs f = funcs;
  const int lanes = s.vector_width;
  const int head_dim = head_dim_of(f.over_dim);
  const int grad_vectors = effective_grad_vectors(s, head_dim);

  // The dQ pass computes its own P and dS: clones, so that each pass
  // schedules them at its own loops.
  const bool pairs = s.bf16_dots;
  Func dq_scores = f.d_scores.clone_in(pairs ? f.d_score_key_pairs : f.dq_sum);
  Func dq_logits = f.d_logits.clone_in(dq_scores);
  Func dq_probs = f.probs.clone_in(dq_logits);
  Func dq_d_probs = f.d_probs.clone_in(dq_logits);
  Func dq_dots = softcap ? f.scores.clone_in({dq_probs, dq_scores}) : f.scores.clone_in(dq_probs);

  f.out_dots.compute_root().parallel(v.h).vectorize(v.i, lanes);
  f.out_dots.update().parallel(v.h).vectorize(v.i, lanes);

  // dK and dV: per key block, summed over the query heads of its KV head and
  // their queries, query_block at a time.
  PassLoops keys;
  tile_rows_in_parallel(outputs.dk, v, v.j, s.key_block, lanes, keys);
  tile_rows_in_parallel(outputs.dv, v, v.j, s.key_block, lanes, keys);
  outputs.dv.compute_with(outputs.dk, keys.blocks);
  f.key_sums.compute_at(outputs.dk, keys.blocks);
  // Over pairs of queries: half the steps, each of pairs.
  const RVar query_pair = f.over_queries.x;
  const RVar query_rows = pairs ? f.over_queries.y : f.over_queries.x;
  const RVar query_head = pairs ? f.over_queries.z : f.over_queries.y;
  const RVar query_steps = chunked_register_tile(
      f.key_sums, v.d, f.key_in_block, query_rows, pairs ? s.query_block / 2 : s.query_block, lanes,
      grad_vectors, s.grad_rows, LoopLevel(outputs.dk, keys.blocks), 1, {query_head},
      pairs ? &query_pair : nullptr);
  // Scores along keys, so K and V are read transposed: copied per query head.
  const LoopLevel key_step(f.key_sums, query_steps);
  const LoopLevel per_head(f.key_sums, query_head);
  Func k_in = pairs ? f.k_pairs : f.k_rows, v_in = pairs ? f.v_pairs : f.v_rows;
  transpose_at(s, f, k_in.in(f.scores), v.j, v, s.key_block, per_head);
  transpose_at(s, f, v_in.in(f.d_probs), v.j, v, s.key_block, per_head);
  schedule_step(s, {v.j, v.i, s.key_block, s.query_block}, key_step, {f.scores, f.d_probs},
                f.over_dim, head_dim, {f.probs, f.d_scores});
  if (pairs) {
    interleave_pairs_at(s, f, {f.d_score_query_pairs, f.prob_query_pairs}, v.j, key_step);
    interleave_pairs_at(s, f, {f.q_query_pairs, f.d_out_query_pairs}, v.d, key_step);
  }

  // dQ: per query block, summed over key blocks.
  PassLoops queries;
  tile_rows_in_parallel(outputs.dq, v, v.i, s.query_block, lanes, queries);
  const LoopLevel query_block(outputs.dq, queries.blocks);
  f.dq_sum.compute_at(query_block);
  const RVar key_pair = f.over_keys.x;
  const RVar key_steps =
      chunked_register_tile(f.dq_sum, v.d, f.query_in_block, pairs ? f.over_keys.y : f.over_keys.x,
                            pairs ? s.key_block / 2 : s.key_block, lanes, grad_vectors, s.grad_rows,
                            query_block, 1, {}, pairs ? &key_pair : nullptr);
  // Scores along queries, stored query-innermost: Q and dO transposed once per block.
  Func queries_in = s.bf16_dots ? f.q_pairs : f.q_rows;
  Func d_out_in = s.bf16_dots ? f.d_out_pairs : f.d_out_rows;
  transpose_at(s, f, queries_in.in(dq_dots), v.i, v, s.query_block, query_block);
  transpose_at(s, f, d_out_in.in(dq_d_probs), v.i, v, s.query_block, query_block);
  for (Func step : {dq_dots, dq_d_probs, dq_probs, dq_scores}) step.reorder_storage(v.i, v.j);
  schedule_step(s, {v.i, v.j, s.query_block, s.key_block}, LoopLevel(f.dq_sum, key_steps),
                {dq_dots, dq_d_probs}, f.over_dim, head_dim, {dq_probs, dq_scores});
  if (pairs) {
    const LoopLevel key_step(f.dq_sum, key_steps);
    interleave_pairs_at(s, f, {f.d_score_key_pairs}, v.i, key_step);
    interleave_pairs_at(s, f, {f.k_key_pairs}, v.d, key_step);
  }
  if (outputs.d_bias.defined()) schedule_bias_pass(s, f, outputs.d_bias, v, head_dim);
}

}  // namespace attnforge::schedules
