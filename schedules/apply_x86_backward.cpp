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

void schedule_step(const BackwardSchedule& s, const StepTiles& t, const LoopLevel& step,
                   const std::vector<Func>& products, const RVar& over_dim, int head_dim,
                   const std::vector<Func>& elementwise) {
  for (Func product : products) {
    align(product, t);
    chunked_register_tile(product, t.x, t.y, over_dim, head_dim, s.vector_width, s.score_vectors,
                          s.score_rows, step, 1);
  }
  for (Func f : elementwise) {
    align(f, t);
    f.compute_at(step).vectorize(t.x, s.vector_width);
  }
}

// A copy of rows (d, r, h, b) with r innermost, as the step tiles load them
// along r, per block of `block` rows.
void transpose_at(Func copy, const Var& rows, const AttentionVars& v, int block, int lanes,
                  const LoopLevel& level) {
  copy.compute_at(level)
      .align_bounds(rows, block)
      .reorder_storage(rows, v.d)
      .reorder(rows, v.d)
      .vectorize(rows, lanes);
}

}  // namespace

void apply_x86_backward(const BackwardSchedule& s, const BackwardFuncs& funcs,
                        BackwardOutputs outputs, const AttentionVars& v, bool softcap) {
  BackwardFuncs f = funcs;
  const int lanes = s.vector_width;
  const int head_dim = f.over_dim.x.extent().as<Halide::Internal::IntImm>()->value;
  const RVar rd = f.over_dim.x;
  const int grad_vectors = effective_grad_vectors(s, head_dim);

  // The dQ pass computes its own P and dS: clones, so that each pass
  // schedules them at its own loops.
  Func dq_scores = f.d_scores.clone_in(f.dq_sum);
  Func dq_probs = f.probs.clone_in(dq_scores);
  Func dq_d_probs = f.d_probs.clone_in(dq_scores);
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
  const RVar query_head = f.over_queries.y;
  const RVar query_steps = chunked_register_tile(
      f.key_sums, v.d, f.key_in_block, f.over_queries.x, s.query_block, lanes, grad_vectors,
      s.grad_rows, LoopLevel(outputs.dk, keys.blocks), 1, {query_head});
  // Scores along keys, so K and V are read transposed: copied per query head.
  const LoopLevel key_step(f.key_sums, query_steps);
  const LoopLevel per_head(f.key_sums, query_head);
  transpose_at(f.k_rows.in(f.scores), v.j, v, s.key_block, lanes, per_head);
  transpose_at(f.v_rows.in(f.d_probs), v.j, v, s.key_block, lanes, per_head);
  schedule_step(s, {v.j, v.i, s.key_block, s.query_block}, key_step, {f.scores, f.d_probs}, rd,
                head_dim, {f.probs, f.d_scores});

  // dQ: per query block, summed over key blocks.
  PassLoops queries;
  tile_rows_in_parallel(outputs.dq, v, v.i, s.query_block, lanes, queries);
  const LoopLevel query_block(outputs.dq, queries.blocks);
  f.dq_sum.compute_at(query_block);
  const RVar key_steps =
      chunked_register_tile(f.dq_sum, v.d, f.query_in_block, f.over_keys.x, s.key_block, lanes,
                            grad_vectors, s.grad_rows, query_block, 1);
  // Scores along queries, stored query-innermost: Q and dO transposed once per block.
  transpose_at(f.q_rows.in(dq_dots), v.i, v, s.query_block, lanes, query_block);
  transpose_at(f.d_out_rows.in(dq_d_probs), v.i, v, s.query_block, lanes, query_block);
  for (Func step : {dq_dots, dq_d_probs, dq_probs, dq_scores}) step.reorder_storage(v.i, v.j);
  schedule_step(s, {v.i, v.j, s.query_block, s.key_block}, LoopLevel(f.dq_sum, key_steps),
                {dq_dots, dq_d_probs}, rd, head_dim, {dq_probs, dq_scores});
}

}  // namespace attnforge::schedules
