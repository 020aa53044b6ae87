#include "apply_cuda_backward.h"

#include <algorithm>
#include <utility>

namespace attnforge::schedules {

namespace {

using Halide::Func;
using Halide::LoopLevel;
using Halide::RVar;
using Halide::TailStrategy;
using Halide::Var;

// A root stage with a block per `rows` rows of a head and batch and a thread
// per row, which loops over the head dim itself.
void thread_per_row(Func f, const Var& d, const Var& row, const Var& block,
                    const AttentionVars& v) {
  Var hb("hb");
  f.compute_root()
      .reorder(d, row, block, v.h, v.b)
      .fuse(v.h, v.b, hb)
      .gpu_blocks(block, hb)
      .gpu_threads(row)
      .unroll(d);
}

// The same with `parts` threads per row, each with head_dim / parts of its
// elements (the threads' y).
void threads_per_row(Func f, const Var& d, const Var& row, const Var& block, const AttentionVars& v,
                     int head_dim, int parts) {
  if (parts == 1) return thread_per_row(f, d, row, block, v);
  Var part("part"), element("element"), hb("hb");
  f.compute_root()
      .split(d, part, element, (head_dim + parts - 1) / parts, TailStrategy::GuardWithIf)
      .reorder(element, row, part, block, v.h, v.b)
      .fuse(v.h, v.b, hb)
      .gpu_blocks(block, hb)
      .gpu_threads(row, part)
      .unroll(element);
}

// A thread's sums over the head dim, kept in the thread (the head dim
// unrolled, so they can live in registers), the head dim innermost in the
// update, inside the rows it sums over.
void sums_in_thread(Func sums, Func per_row, const Var& row, const Var& d,
                    const std::vector<RVar>& over) {
  sums.compute_at(per_row, row).unroll(d);
  std::vector<Halide::VarOrRVar> order = {d};
  order.insert(order.end(), over.begin(), over.end());
  sums.update().reorder(order).unroll(d);
}

// A product over the head dim, one value per step of the thread, in
// unrolled chunks of 8: fully unrolled, the compiler keeps every row it
// loads live until the step's other uses of it, and spills.
void dot_per_step(Func dot, const Halide::RDom& over_dim, const LoopLevel& step) {
  dot.compute_at(step);
  dot.update().unroll(over_dim.x, 8);
}

// A block's rows (d, r, h, b) of one head in shared memory, a thread
// copying each row; stored row-innermost, so that the threads reading their
// own rows along d read consecutive words.
void stage_rows(Func rows, const Var& d, const Var& r, const LoopLevel& block) {
  rows.compute_at(block)
      .store_in(Halide::MemoryType::GPUShared)
      .reorder_storage(r, d)
      .gpu_threads(r)
      .unroll(d);
}

// An output: a thread per element, a block per 32 x 8 elements of a head.
void element_threads(Func out, const Var& d, const Var& rows, const AttentionVars& v) {
  Var db("db"), rb("rb"), dt("dt"), rt("rt"), hb("hb");
  out.gpu_tile(d, rows, db, rb, dt, rt, 32, 8, TailStrategy::GuardWithIf)
      .fuse(v.h, v.b, hb)
      .gpu_blocks(hb);
}

// dBias: a thread per (query, key) entry, a block per 32 keys x 8 queries
// of a head; its K and V rows staged in shared memory, each thread
// recomputing its entry's q.k and dO.v (the Q and dO rows a warp reads are
// one address).
void bias_pass(BackwardFuncs f, Func d_bias, const AttentionVars& v) {
  Var jb("jb"), ib("ib"), jt("jt"), it("it"), hb("hb");
  d_bias.gpu_tile(v.j, v.i, jb, ib, jt, it, kBiasBlockKeys, 8, TailStrategy::GuardWithIf)
      .fuse(v.h, v.b, hb)
      .gpu_blocks(hb);
  const LoopLevel entry(d_bias, jt);
  Func dots = f.bias_terms.scores, d_probs = f.bias_terms.d_probs;
  dot_per_step(dots, f.over_dim, entry);
  dot_per_step(d_probs, f.over_dim, entry);
  for (Func step : {f.bias_terms.probs, f.bias_terms.d_logits}) step.compute_at(entry);
  const LoopLevel block(d_bias, jb);
  // Wrappers, not clones: Halide 21 clones a Func into one consumer only,
  // and the dK/dV pass has k_rows' and v_rows'. A whole block's rows (past
  // Lk they read the last key), so that the shared memory is constant.
  for (auto [rows, consumer] : {std::pair{f.k_rows, dots}, {f.v_rows, d_probs}}) {
    Func staged = rows.in(consumer);
    stage_rows(staged, v.d, v.j, block);
    staged.bound_extent(v.j, kBiasBlockKeys);
  }
}

}  // namespace

int key_row_threads(int head_dim) {
  return std::max(1, (head_dim + kKeySumsPerThread - 1) / kKeySumsPerThread);
}

void apply_cuda_backward(const BackwardSchedule& s, const BackwardFuncs& funcs,
                         BackwardOutputs outputs, const AttentionVars& v, bool softcap,
                         int head_dim) {
  (void)s;  // the blocks' sizes are the algorithm's (BackwardBlocks)
  BackwardFuncs f = funcs;
  // The dQ pass recomputes P and dS: clones, computed at its own loops.
  Func dq_scores = f.d_scores.clone_in(f.dq_sum);
  Func dq_logits = f.d_logits.clone_in(dq_scores);
  Func dq_probs = f.probs.clone_in(dq_logits);
  Func dq_d_probs = f.d_probs.clone_in(dq_logits);
  Func dq_dots = softcap ? f.scores.clone_in({dq_probs, dq_scores}) : f.scores.clone_in(dq_probs);

  // rowsum(dO * O): a thread per query row, before either pass.
  Func out_dots = f.out_dots.in();
  Var rt("rt"), rb("rb"), hb("hb");
  out_dots.compute_root()
      .split(v.i, rb, rt, 64, TailStrategy::GuardWithIf)
      .fuse(v.h, v.b, hb)
      .gpu_blocks(rb, hb)
      .gpu_threads(rt);
  f.out_dots.compute_at(out_dots, rt);

  // dK and dV: a thread per key (or per part of a key's head dim, each
  // recomputing the dot products whole), over the KV head's query heads
  // (outer) and the queries that may see its block.
  const RVar query = f.over_queries.x, query_head = f.over_queries.y;
  Func key_sums = f.key_sums.in();
  threads_per_row(key_sums, v.d, f.key_in_block, f.key_block, v, head_dim,
                  key_row_threads(head_dim));
  sums_in_thread(f.key_sums, key_sums, f.key_in_block, v.d, {query, query_head});
  const LoopLevel per_query(f.key_sums, query);
  dot_per_step(f.scores, f.over_dim, per_query);
  dot_per_step(f.d_probs, f.over_dim, per_query);
  for (Func step : {f.probs, f.d_scores}) step.compute_at(per_query);
  // The block's K and V rows, of its KV head, in shared memory.
  const LoopLevel key_block(key_sums, f.key_block);
  stage_rows(f.k_heads.in(f.k_rows.clone_in(f.scores)), v.d, v.j, key_block);
  stage_rows(f.v_heads.in(f.v_rows.clone_in(f.d_probs)), v.d, v.j, key_block);

  // dQ: a thread per query, over the keys its block may see.
  const RVar key = f.over_keys.x;
  Func dq_sums = f.dq_sum.in();
  thread_per_row(dq_sums, v.d, f.query_in_block, f.query_block, v);
  sums_in_thread(f.dq_sum, dq_sums, f.query_in_block, v.d, {key});
  const LoopLevel per_key(f.dq_sum, key);
  dot_per_step(dq_dots, f.over_dim, per_key);
  dot_per_step(dq_d_probs, f.over_dim, per_key);
  for (Func step : {dq_probs, dq_scores}) step.compute_at(per_key);
  // The block's Q and dO rows in shared memory.
  const LoopLevel query_block(dq_sums, f.query_block);
  stage_rows(f.q_rows.in(dq_dots), v.d, v.i, query_block);
  stage_rows(f.d_out_rows.in(dq_d_probs), v.d, v.i, query_block);

  element_threads(outputs.dk, v.d, v.j, v);
  element_threads(outputs.dv, v.d, v.j, v);
  element_threads(outputs.dq, v.d, v.i, v);
  if (outputs.d_bias.defined()) bias_pass(f, outputs.d_bias, v);
}

}  // namespace attnforge::schedules
