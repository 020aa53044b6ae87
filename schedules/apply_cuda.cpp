#include "apply_cuda.h"

#include <algorithm>
#include <map>
#include <string>

#include "apply_mma.h"
#include "cuda_limits.h"
#include "schedule_check.h"

namespace attnforge::schedules {

namespace {

using Halide::Func;
using Halide::LoopLevel;
using Halide::MemoryType;
using Halide::RVar;
using Halide::Stage;
using Halide::TailStrategy;
using Halide::Var;
using Halide::VarOrRVar;

// Every 2-D stage of a block maps its inner dim to thread x and its row dim
// to thread y. Each thread takes a contiguous chunk of both, so that a
// producer computed per thread covers exactly that chunk.
struct ThreadTile {
  int x_threads, y_threads;
  int x_chunk, y_chunk;  // elements per thread
  // Halide 21's PTX backend stores a vector of f16 converted from f32 as
  // the f32 bits cut in pieces, with no conversion: f16 chunks are unrolled.
  bool vectorize_x = true;
  // A one-warp block (y_threads 1): x runs over gpu_lanes, so that a
  // block-level register Func is striped over the lanes.
  bool lanes = false;
};

// The loops a ThreadTile leaves: threads (xt, yt), per-thread chunk (xc, yc).
struct TileLoops {
  Var xt{"xt"}, yt{"yt"}, xc{"xc"}, yc{"yc"};
  Var xb{"xb"};  // a root stage's innermost block loop (root_tile)
};

// Splits x and y of `stage` into threads over chunks; the chunk loops are
// innermost (x vectorized, y unrolled), `inner` may add reduction loops
// between the chunks and the threads.
void thread_tile(Stage stage, const VarOrRVar& x, const VarOrRVar& y, const ThreadTile& t,
                 const TileLoops& l, const std::vector<VarOrRVar>& inner = {}) {
  stage.split(x, l.xt, l.xc, t.x_chunk, TailStrategy::RoundUp)
      .split(y, l.yt, l.yc, t.y_chunk, TailStrategy::RoundUp);
  std::vector<VarOrRVar> order = {l.xc, l.yc};
  order.insert(order.end(), inner.begin(), inner.end());
  order.push_back(l.xt);
  order.push_back(l.yt);
  stage.reorder(order);
  if (t.lanes) {
    stage.gpu_lanes(l.xt);
  } else {
    stage.gpu_threads(l.xt, l.yt);
  }
  if (t.x_chunk > 1) {
    if (t.vectorize_x) {
      stage.vectorize(l.xc);
    } else {
      stage.unroll(l.xc);
    }
  }
  if (t.y_chunk > 1) stage.unroll(l.yc);
}

// A row statistic (one value per query row): threads along y only, x of
// extent 1, so the block keeps the thread shape of its 2-D stages.
void row_threads(Func f, const Var& rows, const RVar& over, const CudaThreads& t) {
  Var lane("lane"), yt("yt"), yc("yc");
  f.split(rows, yt, yc, t.rows_per_thread, TailStrategy::RoundUp)
      .split(yc, yc, lane, 1)
      .reorder(lane, yc, yt)
      .gpu_threads(lane, yt);
  f.update()
      .split(rows, yt, yc, t.rows_per_thread, TailStrategy::RoundUp)
      .split(yc, yc, lane, 1)
      .reorder(lane, yc, over, yt)
      .gpu_threads(lane, yt);
  if (t.rows_per_thread > 1) {
    f.unroll(yc);
    f.update().unroll(yc);
  }
}

// A key block's row statistic (max or sum over its keys) in two steps: each
// lane of a row reduces its own chunk of keys (all threads busy), then one
// lane per row combines the lanes' partials.
void lane_parallel_row_reduction(Func stat, const Var& rows, const RVar& over_keys,
                                 const LoopLevel& level, const Schedule& s, const CudaThreads& t) {
  if (cuda_warp_block(s)) {
    // A lane per row, reading that row's keys in turn.
    stat.gpu_lanes(rows);
    stat.update().reorder(over_keys, rows).gpu_lanes(rows);
    return;
  }
  if (t.x == 1) {
    row_threads(stat, rows, over_keys, t);
    return;
  }
  RVar lane_keys("lane_keys"), in_lane("in_lane");
  Var lane("lane");
  stat.update().split(over_keys, lane_keys, in_lane, s.key_block / t.x);
  Func partial = stat.update().rfactor(lane_keys, lane);  // stat now reduces over lane_keys
  row_threads(stat, rows, lane_keys, t);
  partial.compute_at(level).store_in(MemoryType::GPUShared);
  for (const Var& arg : partial.args()) {
    const int size = arg.same_as(lane) ? t.x : arg.same_as(rows) ? s.query_tile : 1;
    partial.bound_storage(arg, size);
  }
  const ThreadTile tile{t.x, t.y, 1, t.rows_per_thread};
  thread_tile(partial, lane, rows, tile, TileLoops{});
  thread_tile(partial.update(), lane, rows, tile, TileLoops{}, {in_lane});
}

// Every definition of a per-(x, y) Func of the block: threads over chunks.
void block_stage(Func f, const Var& x, const Var& y, const ThreadTile& t) {
  thread_tile(f, x, y, t, TileLoops{});
  for (int u = 0; u < f.num_update_definitions(); ++u) thread_tile(f.update(u), x, y, t, {});
}

// An input's block copied to shared memory by every thread, with consecutive
// threads on consecutive elements of its innermost dim (coalesced reads).
Func stage_input(Func input, Func consumer, const LoopLevel& level, const CudaThreads& t,
                 int head_dim, int keys) {
  Func staged = input.in(consumer);
  std::vector<Var> args = staged.args();
  staged.bound_storage(args[0], head_dim).bound_storage(args[1], keys);
  Var xo("xo"), xt("xt"), yo("yo"), yt("yt");
  // The guarded split also keeps the input's region, as Halide bounds it
  // over every block, within the input: a one-warp block splits it too, in
  // serial steps of two.
  staged.compute_at(level)
      .store_in(MemoryType::GPUShared)
      .split(args[0], xo, xt, t.x, TailStrategy::GuardWithIf)
      .split(args[1], yo, yt, std::max(t.y, 2), TailStrategy::GuardWithIf)
      .reorder(xt, yt, xo, yo);
  if (t.y > 1) {
    staged.gpu_threads(xt, yt);
  } else {
    staged.gpu_threads(xt).unroll(yt);
  }
  return staged;
}

// An input's block (head dim x `extent` positions) copied to shared memory,
// stored position-major: a warp's lanes read consecutive positions of one
// head-dim element (conflict-free, vector loads). Rows are padded by 4 so
// that the copy's lanes, consecutive in head dim, write different banks.
void stage_transposed(Func input, Func consumer, const LoopLevel& level, const CudaThreads& t,
                      int head_dim, int extent) {
  Func staged = stage_input(input, consumer, level, t, head_dim, extent + kCudaStagedRowPad);
  const std::vector<Var> args = staged.args();
  staged.reorder_storage(args[1], args[0]);
}

// The matrix product `product` (pure x, y; reduction `over`) per thread of
// its consumer's tile: the thread's x_chunk x y_chunk stays in registers.
void register_chunk(Func product, Func consumer, const Var& thread_x, const Var& x, const Var& y,
                    const RVar& over, int x_chunk, int y_chunk) {
  product.compute_at(consumer, thread_x);
  product.update().reorder(x, y, over);
  for (Stage stage : {Stage(product), product.update()}) {
    if (x_chunk > 1) stage.vectorize(x);
    if (y_chunk > 1) stage.unroll(y);
  }
}

// Bounds every dim of `func`'s storage: the size `sizes` gives its name, else 1.
void bound_storage_by_name(Func func, const std::map<std::string, int>& sizes) {
  for (const Var& arg : func.args()) {
    auto size = sizes.find(arg.name());
    func.bound_storage(arg, size == sizes.end() ? 1 : size->second);
  }
}

// Constant sizes for the online form's block-level Funcs: masks make the
// regions a block needs depend on the block, and a launch must not loop over
// every block to size its shared memory. In a one-warp block, lanes write the
// Q tile, logits and probabilities (rows innermost) a head-dim or key chunk
// apart: rows padded by one keep the lanes on different banks.
void bound_block_storage(const Schedule& s, AttentionPipeline& p, int head_dim) {
  OnlineFuncs& f = p.online;
  const TileVars& tv = p.tile_vars;
  auto bound_storage = [&](Func func, int rows) {
    bound_storage_by_name(
        func, {{tv.ii.name(), rows}, {tv.jj.name(), s.key_block}, {p.vars.d.name(), head_dim}});
  };
  for (Func func : {f.state, f.block_max, f.block_sum}) bound_storage(func, s.query_tile);
  for (Func func : {f.q_tile, f.logits, f.probs}) {
    bound_storage(func, s.query_tile + cuda_shared_row_pad(s));
  }
}

void schedule_online(const Schedule& s, AttentionPipeline& p, int head_dim) {
  OnlineFuncs& f = p.online;
  const AttentionVars& v = p.vars;
  const TileVars& tv = p.tile_vars;
  const CudaThreads t = cuda_threads(s, head_dim);
  const bool warp = cuda_warp_block(s);
  const ThreadTile head_tile{t.x, t.y, t.dims_per_thread, t.rows_per_thread, true, warp};
  const ThreadTile key_tile{t.x, t.y, t.keys_per_thread, t.rows_per_thread, true, warp};

  // One block per (query tile, head, batch).
  Var it("it_out"), ii("ii_out");
  TileLoops out_loops;
  Func out = p.output;
  ThreadTile out_tile = head_tile;
  out_tile.vectorize_x = out.types()[0] != Halide::Float(16);
  out.split(v.i, it, ii, s.query_tile, TailStrategy::GuardWithIf);
  thread_tile(out, v.d, ii, out_tile, out_loops);
  out.gpu_blocks(it, v.h, v.b);
  LoopLevel block(out, it);
  if (s.kv_splits > 1) {
    // Key splits (short Lq): blocks over (split, query tile, head and batch)
    // write each split's running state to global memory; each thread of the
    // output's blocks then merges its own elements over the splits.
    Func partial = f.state.in({f.split_max, f.merged});
    const std::vector<Var> args = partial.args();  // d, ii, ks, it, h, b
    Var hb("hb");
    partial.compute_root();
    thread_tile(partial, args[0], args[1], head_tile, TileLoops{});
    partial.fuse(args[4], args[5], hb).gpu_blocks(args[2], args[3], hb);
    block = LoopLevel(partial, args[2]);
    for (Func merge : {f.split_max, f.merged}) merge.compute_at(out, out_loops.xt);
  }

  // The running state lives across key blocks, at block level: in shared
  // memory (a block-level register Func would be whole in every thread),
  // or, in a one-warp block, in registers striped over the lanes.
  const RVar rb = f.over_blocks.x;
  TileLoops state_loops;
  f.state.compute_at(block).store_in(warp ? MemoryType::Register : MemoryType::GPUShared);
  thread_tile(f.state, v.d, tv.ii, head_tile, TileLoops{});
  thread_tile(f.state.update(), v.d, tv.ii, head_tile, state_loops);
  f.state.update().reorder(state_loops.xc, state_loops.yc, state_loops.xt, state_loops.yt, rb);
  const LoopLevel per_block(f.state, rb);

  // Everything in shared memory but the state is produced and consumed
  // within one key block. Halide packs shared allocations by their uses in
  // program order, not across a loop's iterations: a Q tile copied once per
  // block would share bytes with the probabilities written after its last
  // use in an iteration, and the next iteration would read them as Q. So
  // the Q tile is copied per key block too.
  for (Func shared : {f.q_tile, f.logits, f.probs, f.block_max, f.block_sum}) {
    shared.compute_at(per_block).store_in(MemoryType::GPUShared);
  }
  thread_tile(f.q_tile, v.d, tv.ii, head_tile, TileLoops{});
  bound_block_storage(s, p, head_dim);
  TileLoops logit_loops;
  thread_tile(f.logits, tv.jj, tv.ii, key_tile, logit_loops);
  register_chunk(f.scores, f.logits, logit_loops.xt, tv.jj, tv.ii, f.over_dim.x, t.keys_per_thread,
                 t.rows_per_thread);
  thread_tile(f.probs, tv.jj, tv.ii, key_tile, TileLoops{});
  lane_parallel_row_reduction(f.block_max, tv.ii, f.over_block.x, per_block, s, t);
  lane_parallel_row_reduction(f.block_sum, tv.ii, f.over_block.x, per_block, s, t);
  register_chunk(f.pv_sum, f.state, state_loops.xt, v.d, tv.ii, f.over_block.x, t.dims_per_thread,
                 t.rows_per_thread);

  if (s.gpu_stage_kv) {
    // A warp's lanes run over keys in q.k: K is staged keys innermost.
    if (warp) {
      stage_transposed(p.inputs.k, f.scores, per_block, t, head_dim, s.key_block);
    } else {
      stage_input(p.inputs.k, f.scores, per_block, t, head_dim, s.key_block);
    }
    stage_input(p.inputs.v, f.pv_sum, per_block, t, head_dim, s.key_block);
  }
}

// The running state and a key block's logits and P.V of a thread's rows, in
// its registers: every loop over their elements is unrolled, so each access
// has a constant index. The Q row is read in q.k's loop over the head dim, so
// it stays in the thread's local memory (L1), which keeps the registers for
// the state. The key block's Funcs live per key block of the state update.
// Each row is a tile of its own: the rows are the tiles' loop (it).
void rows_in_registers(const Schedule& s, AttentionPipeline& p, const LoopLevel& thread) {
  OnlineFuncs& f = p.online;
  const AttentionVars& v = p.vars;
  const Var& row = p.tile_vars.it;
  const Var& jj = p.tile_vars.jj;
  const RVar re = f.over_state.x, rb = f.over_state.y;
  const int rows = cuda_threads(s, f.head_dim).rows_per_thread;
  f.state.compute_at(thread).bound_storage(v.d, f.max_at() + 1).bound_storage(row, rows);
  f.state.unroll(v.d).unroll(row);
  // The state's elements a chunk at a time, the chunk's P.V computed just
  // before it (kCudaRowPvChunk).
  const int chunk = std::min(f.head_dim, kCudaRowPvChunk);
  RVar re_chunk("re_chunk"), re_in("re_in");
  f.state.update()
      .split(re, re_chunk, re_in, chunk, TailStrategy::GuardWithIf)
      .reorder(re_in, row, re_chunk, rb)
      .unroll(re_in)
      .unroll(row)
      .unroll(re_chunk);
  f.q_tile.compute_at(thread).bound_storage(row, rows).vectorize(v.d, 4).unroll(v.d).unroll(row);

  const LoopLevel per_block(f.state, rb);
  const RVar rd = f.over_dim.x, rj = f.over_block.x;
  // q.k four head-dim elements at a time (vector loads of K), the four
  // partial sums added at the end.
  RVar rd_outer("rd_outer"), rd_lane("rd_lane");
  Var lane("lane");
  f.scores.compute_at(per_block).reorder(jj, row).unroll(jj).unroll(row);
  f.scores.update().split(rd, rd_outer, rd_lane, 4);
  Func partial = f.scores.update().rfactor(rd_lane, lane);
  f.scores.update().reorder(jj, row, rd_lane).unroll(jj).unroll(row).unroll(rd_lane);
  partial.compute_at(per_block).reorder(lane, jj, row).vectorize(lane).unroll(jj).unroll(row);
  partial.update().reorder(lane, jj, row, rd_outer).vectorize(lane).unroll(jj).unroll(row);
  for (Func keys : {f.logits, f.probs}) {
    keys.compute_at(per_block).reorder(jj, row).unroll(jj).unroll(row);
  }
  for (Func stat : {f.block_max, f.block_sum}) {
    stat.compute_at(per_block).unroll(row);
    stat.update().reorder(row, rj).unroll(row).unroll(rj);
  }
  // P.V per key block and chunk of the state, four head-dim elements at a
  // time (vector loads of V).
  f.pv_sum.compute_at(f.state, re_chunk).bound_extent(v.d, chunk);
  f.pv_sum.reorder(v.d, row).vectorize(v.d, 4).unroll(v.d).unroll(row);
  f.pv_sum.update().reorder(v.d, row, rj).vectorize(v.d, 4).unroll(v.d).unroll(row).unroll(rj);
  // Constant sizes, or Halide sizes the last (partial) key block's Funcs at
  // run time and puts them in global memory.
  const std::map<std::string, int> sizes = {
      {row.name(), rows}, {jj.name(), s.key_block}, {v.d.name(), f.head_dim}, {lane.name(), 4}};
  for (Func func : {f.scores, partial, f.logits, f.probs, f.block_max, f.block_sum}) {
    bound_storage_by_name(func, sizes);
  }
  bound_storage_by_name(f.pv_sum, {{row.name(), rows}, {v.d.name(), chunk}});
}

// online_rows: a thread per query row (and key split). K and V rows are read
// by every lane of a warp at one address, which L1 broadcasts: no shared
// memory and no barriers. With key splits, a first kernel writes each
// split's state, and a second merges them, a thread per head-dim element.
void schedule_online_rows(const Schedule& s, AttentionPipeline& p, int head_dim) {
  OnlineFuncs& f = p.online;
  const AttentionVars& v = p.vars;
  const CudaThreads t = cuda_threads(s, head_dim);
  Func out = p.output;
  Var it("it_out"), ii("ii_out"), yt("yt"), yc("yc");
  out.split(v.i, it, ii, s.query_tile, TailStrategy::GuardWithIf);
  if (s.kv_splits == 1) {
    out.split(ii, yt, yc, t.rows_per_thread, TailStrategy::GuardWithIf)
        .reorder(v.d, yc, yt, it, v.h, v.b)
        .gpu_blocks(it, v.h, v.b)
        .gpu_threads(yt)
        .unroll(yc);
    // Halide 21's PTX backend drops the conversion of a vector f16 store.
    if (out.types()[0] != Halide::Float(16)) out.vectorize(v.d, 4);
    out.unroll(v.d);
    rows_in_registers(s, p, LoopLevel(out, yt));
    return;
  }
  const std::vector<Var> args = f.state.args();  // e, ii, ks, it, h, b
  Func partial = f.state.in({f.split_max, f.merged});
  Var kst("kst"), ksb("ksb"), rt("rt"), hb("hb");
  partial.compute_root()
      .split(args[2], ksb, kst, t.x, TailStrategy::RoundUp)
      .split(args[3], rt, yt, s.query_tile, TailStrategy::RoundUp)
      .split(yt, yt, yc, t.rows_per_thread, TailStrategy::RoundUp)
      .reorder(args[0], yc, args[1], kst, yt, ksb, rt, args[4], args[5])
      .fuse(args[4], args[5], hb)
      .gpu_blocks(ksb, rt, hb)
      .gpu_threads(kst, yt)
      .unroll(args[0])
      .unroll(yc);
  partial.bound(args[0], 0, f.max_at() + 1).bound(args[1], 0, 1);
  rows_in_registers(s, p, LoopLevel(partial, kst));
  // The merge: each thread a chunk of the head dim of every row, over every split.
  Var dt("dt"), dc("dc");
  const int chunk = std::max(1, head_dim / (t.x * t.y));
  out.split(v.d, dt, dc, chunk)
      .reorder(dc, ii, dt, it, v.h, v.b)
      .gpu_blocks(it, v.h, v.b)
      .gpu_threads(dt)
      .unroll(dc);
  for (Func merge : {f.split_max, f.merged}) merge.compute_at(out, ii);
}

// A root stage of the materialized form: blocks of `block_x` x `block_y`
// elements (and one per head and batch), threads over chunks of each. An
// intermediate rounds up to whole tiles (the form reads its inputs at clamped
// positions); an output is guarded at its edges.
void root_tile(Stage stage, const Var& x, const Var& y, const Var& h, const Var& b, int block_x,
               int block_y, const CudaThreads& t, const TileLoops& l, bool output = false) {
  Var yb("yb"), hb("hb");
  const Var& xb = l.xb;
  const auto edge = output ? TailStrategy::GuardWithIf : TailStrategy::RoundUp;
  stage.split(x, xb, x, block_x, edge).split(y, yb, y, block_y, edge);
  stage.split(x, l.xt, l.xc, block_x / t.x, edge).split(y, l.yt, l.yc, block_y / t.y, edge);
  stage.reorder(l.xc, l.yc, l.xt, l.yt, xb, yb, h, b).fuse(h, b, hb);
  stage.gpu_blocks(xb, yb, hb).gpu_threads(l.xt, l.yt);
  if (block_x > t.x) stage.unroll(l.xc);
  if (block_y > t.y) stage.unroll(l.yc);
}

// A per-row statistic at root, one block per gpu_threads_y rows: the warp's
// lanes of a row each reduce every 32nd key (consecutive lanes read
// consecutive keys), then one lane per row combines the 32 partials.
void root_rows(Func f, const Var& i, const Var& h, const Var& b, const RVar& over,
               const CudaThreads& t) {
  constexpr int kLanes = 32;
  Var ib("ib"), it("it"), hb("hb"), lane("lane");
  RVar over_lanes("over_lanes"), lane_keys("lane_keys");
  f.compute_root();
  f.update().split(over, over_lanes, lane_keys, kLanes);
  Func partial = f.update().rfactor(lane_keys, lane);  // f now reduces over lane_keys
  // The initial values: a kernel of its own, a thread per row.
  f.split(i, ib, it, t.x * t.y, TailStrategy::GuardWithIf).fuse(h, b, hb);
  f.gpu_blocks(ib, hb).gpu_threads(it);
  f.update().split(i, ib, it, t.y, TailStrategy::GuardWithIf).fuse(h, b, hb);
  f.update().reorder(lane_keys, it, ib, hb).gpu_blocks(ib, hb).gpu_threads(it);
  partial.compute_at(f, ib).store_in(MemoryType::GPUShared);
  partial.bound_storage(lane, kLanes).bound_storage(i, t.y);
  partial.reorder(lane, i).gpu_threads(lane, i);
  partial.update().reorder(over_lanes, lane, i).gpu_threads(lane, i);
}

// The unfused pipeline on the GPU: q.k with the masking written once per
// element (the product in registers), the row statistics, the exponentials,
// and P.V computed per thread of the output's tile.
void schedule_materialized(const Schedule& s, AttentionPipeline& p, int head_dim) {
  MaterializedFuncs& f = p.materialized;
  const AttentionVars& v = p.vars;
  const CudaThreads t = cuda_threads(s, head_dim);
  TileLoops logit_loops;
  f.logits.compute_root();
  root_tile(f.logits, v.j, v.i, v.h, v.b, s.key_block, s.query_tile, t, logit_loops);
  register_chunk(f.scores, f.logits, logit_loops.xt, v.j, v.i, f.over_dim.x, s.key_block / t.x,
                 s.query_tile / t.y);
  if (s.gpu_stage_kv) {
    // The block's K and Q rows in shared memory, read there by every thread.
    const LoopLevel block(f.logits, logit_loops.xb);
    stage_transposed(f.k_rows, f.scores, block, t, head_dim, s.key_block);
    stage_transposed(f.q_rows, f.scores, block, t, head_dim, s.query_tile);
  }
  root_rows(f.row_max, v.i, v.h, v.b, f.over_keys.x, t);
  f.exp_logits.compute_root();
  root_tile(f.exp_logits, v.j, v.i, v.h, v.b, s.key_block, s.query_tile, t, TileLoops{});
  root_rows(f.row_sum, v.i, v.h, v.b, f.over_keys.x, t);
  TileLoops out_loops;
  root_tile(p.output, v.d, v.i, v.h, v.b, head_dim, s.query_tile, t, out_loops, true);
  register_chunk(f.pv, p.output, out_loops.xt, v.d, v.i, f.over_keys.x, head_dim / t.x,
                 s.query_tile / t.y);
  if (p.weights.defined()) {
    root_tile(p.weights, v.j, v.i, v.h, v.b, s.key_block, s.query_tile, t, TileLoops{}, true);
  }
}

}  // namespace

void apply_cuda(const Schedule& schedule, AttentionPipeline& pipeline, int head_dim) {
  switch (schedule.form) {
    case Form::online:
      schedule_online(schedule, pipeline, head_dim);
      break;
    case Form::online_rows:
      schedule_online_rows(schedule, pipeline, head_dim);
      break;
    case Form::online_mma:
      apply_mma_cuda(schedule, pipeline);
      break;
    case Form::materialized:
      schedule_materialized(schedule, pipeline, head_dim);
      break;
    case Form::fused:  // not among the knob table's CUDA forms: the check names it
      throw check_legal_values(schedule, TargetKind::gpu, {KnobScope::attention}).value();
  }
}

}  // namespace attnforge::schedules
