#include "apply_layer_x86.h"

#include "apply_x86.h"
#include "layer_schedule.h"
#include "naive_schedule.h"
#include "register_tile.h"

namespace attnforge::schedules {

namespace {

using Halide::Func;
using Halide::LoopLevel;
using Halide::TailStrategy;
using Halide::Var;

constexpr int kCopyRows = 64;  // rows per parallel task of the output copy

// A projection per query tile of the attention: only that tile's rows of one head.
void schedule_projection_at(const Schedule& s, const Projection& p, const AttentionVars& v,
                            int head_dim, const LoopLevel& tile) {
  Func out = p.out;
  out.compute_at(tile);
  register_tile(out, p.sum, v.d, v.i, {p.over_model.x}, projection_lanes(s, head_dim),
                projection_tile_vectors(s, head_dim), s.projection_rows, Var("xo"), Var("yo"), v.i);
}

// A GEMM at root over blocks of rows: each block stays in cache while every
// register-tile column of the weight (and head) passes over it; blocks and
// batches run in parallel. `head` is null for the output projection.
void schedule_gemm_root(const Schedule& s, Func out, Func sum, Var x, Var y, const Var* head,
                        Var batch, const std::vector<Halide::RVar>& reduction, int features) {
  Var yb("yb"), yt("yt"), xo("xo"), yo("yo"), xi("xi"), yi("yi"), tasks("tasks");
  out.compute_root().split(y, yb, yt, s.projection_block, TailStrategy::RoundUp);
  register_tile(out, sum, x, yt, reduction, projection_lanes(s, features),
                projection_tile_vectors(s, features), s.projection_rows, xo, yo, y);
  if (head) {
    out.reorder(xi, yi, yo, xo, *head, yb, batch);
  } else {
    out.reorder(xi, yi, yo, xo, yb, batch);
  }
  sum.compute_at(out, yo);  // the register tile: yo is now the innermost tile loop
  out.fuse(yb, batch, tasks).parallel(tasks);
}

}  // namespace

void apply_layer_x86(const Schedule& s, LayerPipeline& p, const LayerSpec& spec) {
  const int D = spec.head_dim();
  const AttentionVars& v = p.attention.vars;
  OutputProjection& o = p.output_projection;
  // The output projection reads each row's heads one after another.
  o.heads.compute_root().reorder_storage(v.d, v.h, v.i, v.b);
  if (spec.weights == LayerWeights::averaged) p.attention.weights.compute_root();
  const LoopLevel tile = apply_x86(attention_part(s), p.attention, D);

  const std::vector<Projection>& projections = p.projections.all;
  for (size_t n = 0; n < projections.size(); ++n) {
    const Projection& proj = projections[n];
    if (static_cast<int>(n) == p.projections.query && s.projection_fuse_q) {
      schedule_projection_at(s, proj, v, D, tile);
    } else {
      schedule_gemm_root(s, proj.out, proj.sum, v.d, v.i, &v.h, v.b, {proj.over_model.x}, D);
    }
  }
  schedule_gemm_root(s, o.output, o.sum, o.m, v.i, nullptr, v.b,
                     {o.over_features.x, o.over_features.y}, spec.d_model);

  Var rows("rows");
  const int lanes = projection_lanes(s, spec.d_model);
  p.output.split(v.i, rows, v.i, kCopyRows, TailStrategy::GuardWithIf)
      .parallel(rows)
      .vectorize(o.m, lanes, TailStrategy::GuardWithIf);
  if (spec.weights == LayerWeights::averaged) {
    p.weights.split(v.i, rows, v.i, kCopyRows, TailStrategy::GuardWithIf)
        .parallel(rows)
        .vectorize(v.j, s.vector_width, TailStrategy::GuardWithIf);
  }
}

void apply_layer_naive(LayerPipeline& p, const Halide::Target& target) {
  for (const Projection& proj : p.projections.all) {
    Func(proj.sum).compute_root();
    Func(proj.out).compute_root();
  }
  MaterializedFuncs attention = p.attention.materialized;
  attention.output = p.output_projection.heads;
  attention.weights = p.attention.weights;
  apply_naive(attention, p.attention.vars, target);
  p.output_projection.sum.compute_root();
  p.output_projection.output.compute_root();
}

}  // namespace attnforge::schedules
