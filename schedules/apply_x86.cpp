#include "apply_x86.h"

#include <algorithm>

namespace attnforge::schedules {

namespace {

using Halide::Func;
using Halide::LoopLevel;
using Halide::RVar;
using Halide::TailStrategy;
using Halide::Var;

bool has(const Schedule& s, ParallelLoop loop) {
  return std::find(s.parallel.begin(), s.parallel.end(), loop) != s.parallel.end();
}

// Vectors of the head dim per register tile: the most, up to register_vectors,
// that divide it evenly.
int head_dim_vectors(const Schedule& s, int head_dim) {
  int vectors = std::min(s.register_vectors, head_dim / s.vector_width);
  while (vectors > 1 && head_dim % (vectors * s.vector_width) != 0) --vectors;
  return vectors;
}

// Splits the output's query loop into tiles and parallelizes the loops the
// schedule names, fused into one. Returns the loop to compute a tile's work at.
LoopLevel tile_output(const Schedule& s, Func out, const AttentionVars& v, Var it, Var ii,
                      int head_dim) {
  out.split(v.i, it, ii, s.query_tile, TailStrategy::GuardWithIf);
  out.reorder(v.d, ii, it, v.h, v.b);
  if (head_dim >= s.vector_width) out.vectorize(v.d, s.vector_width, TailStrategy::GuardWithIf);
  std::vector<Var> outer;  // innermost first
  if (has(s, ParallelLoop::query_tiles)) outer.push_back(it);
  if (has(s, ParallelLoop::heads)) outer.push_back(v.h);
  if (has(s, ParallelLoop::batch)) outer.push_back(v.b);
  if (outer.empty()) return LoopLevel(out, it);
  Var fused = outer[0];
  for (size_t n = 1; n < outer.size(); ++n) {
    Var next(fused.name() + "_" + outer[n].name());
    out.fuse(fused, outer[n], next);
    fused = next;
  }
  out.parallel(fused);
  return LoopLevel(out, outer[0].same_as(it) ? fused : it);
}

// A matrix product `product` (pure vector dim x, row dim y, reduction r) whose
// consumer `consumer` is tiled into register tiles of (vectors * VW) x rows:
// the product is computed per register tile, reduction loop outermost, so its
// accumulators stay in registers. Tiles round up: every form reads its inputs
// at clamped positions, so a partial tile computes a few unused values instead
// of giving the inner loops a variable extent.
void register_tile(const Schedule& s, Func consumer, Func product, Var x, Var y, RVar r,
                   int vectors, int rows) {
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  consumer.tile(x, y, xo, yo, xi, yi, s.vector_width * vectors, rows, TailStrategy::RoundUp)
      .vectorize(xi, s.vector_width)
      .unroll(yi);
  product.compute_at(consumer, xo).vectorize(x, s.vector_width).unroll(x).unroll(y);
  product.update().reorder(x, y, r).vectorize(x, s.vector_width).unroll(x).unroll(y);
}

void schedule_online(const Schedule& s, AttentionPipeline& p, int head_dim) {
  OnlineFuncs& f = p.online;
  const AttentionVars& v = p.vars;
  const TileVars& t = p.tile_vars;
  Var it("it_out"), ii("ii_out");
  LoopLevel tile = tile_output(s, p.output, v, it, ii, head_dim);
  const RVar rb = f.over_blocks.x, rj = f.over_block.x, rd = f.over_dim.x;
  const int VW = s.vector_width;
  const int d_vectors = head_dim_vectors(s, head_dim);

  if (s.intermediates == StoreLevel::root) {
    f.q_tile.compute_root().vectorize(t.ii, VW);
  } else {
    f.q_tile.compute_at(tile).vectorize(t.ii, VW);
  }
  f.state.compute_at(tile).vectorize(v.d, VW);
  f.state.update().reorder(v.d, t.ii, rb).vectorize(v.d, VW);

  LoopLevel block(f.state, rb);
  f.logits.compute_at(block);
  register_tile(s, f.logits, f.scores, t.ii, t.jj, rd, s.register_vectors, s.register_rows);
  f.block_max.compute_at(block).vectorize(t.ii, VW);
  f.block_max.update().reorder(t.ii, rj).vectorize(t.ii, VW);
  f.probs.compute_at(block).vectorize(t.ii, VW);
  f.block_sum.compute_at(block).vectorize(t.ii, VW);
  f.block_sum.update().reorder(t.ii, rj).vectorize(t.ii, VW);
  f.block_pv.compute_at(block);
  register_tile(s, f.block_pv, f.pv_sum, v.d, t.ii, rj, d_vectors, s.register_rows);
  if (s.unroll > 1) f.pv_sum.update().unroll(rj, s.unroll);
}

void schedule_fused(const Schedule& s, AttentionPipeline& p, int head_dim) {
  FusedFuncs& f = p.fused;
  const AttentionVars& v = p.vars;
  const TileVars& t = p.tile_vars;
  Var it("it_out"), ii("ii_out");
  LoopLevel tile = tile_output(s, p.output, v, it, ii, head_dim);
  const RVar rk = f.over_keys.x, rd = f.over_dim.x;
  const int VW = s.vector_width;
  const int d_vectors = head_dim_vectors(s, head_dim);

  if (s.intermediates == StoreLevel::root) {
    f.q_tile.compute_root().vectorize(t.ii, VW);
  } else {
    f.q_tile.compute_at(tile).vectorize(t.ii, VW);
  }
  f.logits.compute_at(tile);
  register_tile(s, f.logits, f.scores, t.ii, v.j, rd, s.register_vectors, s.register_rows);
  f.row_max.compute_at(tile).vectorize(t.ii, VW);
  f.row_max.update().reorder(t.ii, rk).vectorize(t.ii, VW);
  f.probs.compute_at(tile).vectorize(t.ii, VW);
  f.row_sum.compute_at(tile).vectorize(t.ii, VW);
  f.row_sum.update().reorder(t.ii, rk).vectorize(t.ii, VW);
  f.pv.compute_at(tile);
  register_tile(s, f.pv, f.pv_sum, v.d, t.ii, rk, d_vectors, s.register_rows);
  if (s.unroll > 1) f.pv_sum.update().unroll(rk, s.unroll);
}

// The unfused pipeline done well: each stage at root, parallel over heads
// and batch, vectorized along its innermost dim.
void schedule_materialized(const Schedule& s, AttentionPipeline& p) {
  MaterializedFuncs& f = p.materialized;
  const AttentionVars& v = p.vars;
  const int VW = s.vector_width;
  auto stage = [&](Func func, Var inner, bool reduction) {
    Var hb("hb");
    func.compute_root()
        .fuse(v.h, v.b, hb)
        .parallel(hb)
        .vectorize(inner, VW, TailStrategy::GuardWithIf);
    if (reduction) {
      Var hbu("hbu");
      func.update()
          .fuse(v.h, v.b, hbu)
          .parallel(hbu)
          .vectorize(inner, VW, TailStrategy::GuardWithIf);
    }
  };
  stage(f.scores, v.j, true);
  stage(f.logits, v.j, false);
  stage(f.row_max, v.i, true);
  stage(f.exp_logits, v.j, false);
  stage(f.row_sum, v.i, true);
  stage(f.pv, v.d, true);
  Var hb("hb_out");
  p.output.fuse(v.h, v.b, hb).parallel(hb).vectorize(v.d, VW, TailStrategy::GuardWithIf);
  if (p.weights.defined()) {
    Var hbw("hb_weights");
    p.weights.fuse(v.h, v.b, hbw).parallel(hbw).vectorize(v.j, VW, TailStrategy::GuardWithIf);
  }
}

}  // namespace

void apply_x86(const Schedule& schedule, AttentionPipeline& pipeline, int head_dim) {
  switch (schedule.form) {
    case Form::materialized:
      schedule_materialized(schedule, pipeline);
      break;
    case Form::fused:
      schedule_fused(schedule, pipeline, head_dim);
      break;
    case Form::online:
      schedule_online(schedule, pipeline, head_dim);
      break;
  }
}

}  // namespace attnforge::schedules
