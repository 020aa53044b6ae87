#include "apply_x86.h"

#include <algorithm>

#include "register_tile.h"
#include "schedule_check.h"

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

// Vectors of the head dim per P.V register tile: the most, up to the tile's,
// that divide it evenly.
int head_dim_vectors(const Schedule& s, int head_dim) {
  int vectors = std::min(effective_pv_vectors(s), head_dim / s.vector_width);
  while (vectors > 1 && head_dim % (vectors * s.vector_width) != 0) --vectors;
  return vectors;
}

// Splits the output's query loop into tiles and parallelizes the loops the
// schedule names, fused into one. Where tile rows group heads, the tiles run
// over rows r = i * groups + h % groups of each KV head h / groups, as the
// forms number them. Returns the loop to compute a tile's work at.
LoopLevel tile_output(const Schedule& s, Func out, const AttentionVars& v, int groups, Var it,
                      Var ii, int head_dim) {
  Var rows = v.i, heads = v.h;
  if (groups > 1) {
    Var kv_head("kv_head"), in_group("in_group"), grouped_rows("grouped_rows");
    out.split(v.h, kv_head, in_group, groups, TailStrategy::GuardWithIf)
        .reorder(v.d, in_group, v.i, kv_head, v.b)
        .fuse(in_group, v.i, grouped_rows);
    rows = grouped_rows;
    heads = kv_head;
  }
  out.split(rows, it, ii, s.query_tile, TailStrategy::GuardWithIf);
  out.reorder(v.d, ii, it, heads, v.b);
  if (head_dim >= s.vector_width) out.vectorize(v.d, s.vector_width, TailStrategy::GuardWithIf);
  std::vector<Var> outer;  // innermost first
  if (has(s, ParallelLoop::query_tiles)) outer.push_back(it);
  if (has(s, ParallelLoop::heads)) outer.push_back(heads);
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

// A paged cache whose pages tile a key block, `tile_keys` keys at a time: a
// loop over a block's keys splits into pages, so that the keys of one page
// share their page lookup, hoisted out of the loop over the page's positions.
bool splits_keys_by_page(const Schedule& s, const AttentionPipeline& p, int tile_keys) {
  const int page = p.inputs.page_size;
  return page > 1 && page < s.key_block && s.key_block % page == 0 && page % tile_keys == 0;
}

void register_tile(const Schedule& s, Func consumer, Func product, Var x, Var y, RVar r,
                   int vectors, int rows, const RVar* pair = nullptr) {
  schedules::register_tile(consumer, product, x, y, {r}, s.vector_width, vectors, rows, Var("xo"),
                           Var("yo"), y, pair);
}

// Splits the output into query tiles and places the scaled Q copy; returns
// the loop a tile's work is computed at.
LoopLevel schedule_query_tiles(const Schedule& s, AttentionPipeline& p, const QueryTileFuncs& q,
                               int head_dim) {
  Var it("it_out"), ii("ii_out");
  LoopLevel tile = tile_output(s, p.output, p.vars, p.grouped_heads, it, ii, head_dim);
  Func q_tile = q.q_tile, q_pairs = q.q_pairs, q_step = q.q_step, q_levels = q.q_levels;
  // int16 dot products: the copy, each row's step over it, then its levels.
  std::vector<Func> copies = {s.bf16_dots ? q_pairs : q_tile};
  if (s.int16_dots) copies = {q_tile, q_step, q_levels};
  for (Func copy : copies) {
    if (s.q_copy_at == StoreLevel::root) {
      copy.compute_root();
    } else {
      copy.compute_at(tile);
    }
  }
  if (s.int16_dots) {
    q_levels.reorder_storage(p.vars.d, p.tile_vars.ii)
        .reorder(p.vars.d, p.tile_vars.ii)
        .vectorize(p.vars.d, s.vector_width);
  }
  if (s.bf16_dots) {
    // Pairs of head-dim elements interleaved, as the dot products read them.
    Var pair_row("pair_row");
    q_pairs.fuse(p.tile_vars.pair, p.tile_vars.ii, pair_row)
        .vectorize(pair_row, 2 * s.vector_width);
  } else if (s.dot_axis == DotAxis::head_dim) {
    // Each row's head dim contiguous: q.k loads it in vectors.
    q_tile.reorder_storage(p.vars.d, p.tile_vars.ii)
        .reorder(p.vars.d, p.tile_vars.ii)
        .vectorize(p.vars.d, s.vector_width);
  } else {
    q_tile.vectorize(p.tile_vars.ii, s.vector_width);
  }
  return tile;
}

// The stages both tiled forms share: the q.k register tile, row statistics
// over the key reduction, probabilities and the P.V register tile.
struct SoftmaxStages {
  Func logits, scores, max, probs, sum, pv, pv_sum;
  Var key;         // pure key dim of logits and probs
  RVar over_keys;  // key reduction of P.V, and of max and sum where they reduce directly
  RVar over_dim;   // head-dim reduction of q.k
  // The fused form's max and sum combine per-lane partials over key groups.
  Func max_lanes = {}, sum_lanes = {};
  RVar over_groups = {};
  // bf16 dot products: q.k over head-dim pairs, P.V over key pairs (pair
  // innermost, over_dim and pv_keys their outer loops), with P and V packed in pairs.
  RVar dim_pair = {}, key_pair = {}, pv_keys = {};
  // Interleaved bf16 K rows: q.k over (over_dim = lane, dim_half, dim_chunk).
  RVar dim_half = {}, dim_chunk = {};
  Func prob_pairs = {}, v_pairs = {};
  // A paged cache's K rows (per key) and V lines (per line of P.V's tile) ahead,
  // where the form has them.
  Func key_prefetch = {}, value_prefetch = {};
};

// A row max or sum: a reduction over keys, vectorized across rows; or, where
// the form keeps per-lane partials, those partials per query tile with one
// register per lane, combined after.
void schedule_row_statistic(const Schedule& s, Func stat, Func lanes, const SoftmaxStages& st,
                            const LoopLevel& level, const AttentionPipeline& p) {
  const Var ii = p.tile_vars.ii, lane = p.tile_vars.lane;
  stat.compute_at(level).vectorize(ii, s.vector_width);
  if (!lanes.defined()) {
    stat.update().reorder(ii, st.over_keys).vectorize(ii, s.vector_width);
    return;
  }
  lanes.compute_at(stat, p.tile_vars.it).vectorize(ii, s.vector_width).unroll(lane);
  lanes.update().reorder(ii, lane, st.over_groups).vectorize(ii, s.vector_width).unroll(lane);
}

// q.k along the head dim: per tile of register_rows rows x register_vectors
// keys, vector partial sums over the head dim (an rfactor), then one vector
// reduction per key for its rows' horizontal sums. Logits are stored
// key-innermost for the statistics and probabilities, which vectorize along
// keys.
void schedule_dots_along_head_dim(const Schedule& s, const SoftmaxStages& st,
                                  const LoopLevel& level, const AttentionPipeline& p) {
  const Var ii = p.tile_vars.ii, key = st.key;
  Var io("io"), ko("ko"), iin("iin"), kin("kin"), lane("dot_lane");
  RVar dim_outer("dim_outer"), dim_lane("dim_lane");
  Func logits = st.logits, scores = st.scores;
  logits.compute_at(level).reorder_storage(key, ii);
  Var keys = key;
  if (splits_keys_by_page(s, p, s.register_vectors)) {
    Var key_page("key_page"), in_page("in_page");
    logits.split(key, key_page, in_page, p.inputs.page_size);
    keys = in_page;
  }
  logits
      .tile(ii, keys, io, ko, iin, kin, s.register_rows, s.register_vectors, TailStrategy::RoundUp)
      .reorder(iin, kin, io, ko)
      .unroll(iin)
      .unroll(kin);
  // Interleaved bf16 K rows: over_dim runs over a vector's lanes already, and
  // its two halves, unrolled, read one load of K.
  const bool interleaved = p.interleaved_lanes > 0;
  if (interleaved) {
    dim_lane = st.over_dim;
  } else {
    scores.update().split(st.over_dim, dim_outer, dim_lane, s.vector_width);
  }
  Func partial = scores.update().rfactor(dim_lane, lane);
  // rfactor appends its lane dim; stored innermost, each partial sum is one
  // vector. Computed per register tile, the partial sums stay in registers
  // until their horizontal sums; a whole block's would fill L1 (32 KB for four
  // rows of 128 keys), be zeroed in memory and push out the K and V streams.
  Var pio("pio"), pko("pko"), pii("pii"), pki("pki");
  partial.reorder_storage(lane, ii, key)
      .compute_at(logits, ko)
      .vectorize(lane)
      .unroll(ii)
      .unroll(key);
  Halide::Stage tile_dots = partial.update().tile(ii, key, pio, pko, pii, pki, s.register_rows,
                                                  s.register_vectors, TailStrategy::RoundUp);
  if (interleaved) {
    tile_dots.reorder(lane, pii, st.dim_half, pki, st.dim_chunk, pio, pko).unroll(st.dim_half);
  } else if (s.int16_dots) {
    // Each lane sums a pair of products: one int16 dot product per vector.
    tile_dots.reorder(st.dim_pair, lane, pii, pki, dim_outer, pio, pko)
        .atomic()
        .vectorize(st.dim_pair);
  } else {
    tile_dots.reorder(lane, pii, pki, dim_outer, pio, pko);
  }
  tile_dots.vectorize(lane).unroll(pii).unroll(pki);
  // K streams with one prefetch per cache line, spread over the block's loads.
  // (A prefetch of a whole block at the block loop gets an empty region from
  // Halide 21 whenever the block's bounds are let-bound in its body.)
  if (s.prefetch_blocks > 0 && p.inputs.k_buffer.defined() && !st.key_prefetch.defined()) {
    logits.prefetch(p.inputs.k_buffer, ko, ko, prefetch_distance(s) / s.register_vectors,
                    Halide::PrefetchBoundStrategy::NonFaulting);
  }
  if (st.key_prefetch.defined()) {  // a paged cache: each K row once
    Func(st.key_prefetch).compute_at(logits, ko).unroll(key);
  }
  // The horizontal sums of one key's rows as one vector reduction over their
  // partial-sum vectors: Halide adds adjacent lanes pairwise in log2(width)
  // steps across all those vectors at once (vhaddps on x86), so each step adds
  // whole vectors and the key's scores come out as one vector. atomic():
  // floats summed in this order rather than lane by lane, as meant.
  RVar row_lanes("row_lanes");
  scores.compute_at(logits, io).vectorize(ii).unroll(key);
  scores.update()
      .reorder(dim_lane, ii, key)
      .fuse(dim_lane, ii, row_lanes)
      .atomic()
      .vectorize(row_lanes)
      .unroll(key);
}

// A row statistic of the dots-along-head-dim schedule: one vector of partial
// results per row along the keys, reduced across its lanes at the end.
void schedule_statistic_along_keys(const Schedule& s, Func stat, RVar keys, const LoopLevel& level,
                                   const AttentionPipeline& p) {
  const Var ii = p.tile_vars.ii;
  RVar key_outer("key_outer"), key_lane("key_lane");
  Var lane("stat_lane");
  stat.compute_at(level);
  Func lanes =
      stat.update().split(keys, key_outer, key_lane, s.vector_width).rfactor(key_lane, lane);
  lanes.compute_at(stat, ii).vectorize(lane);
  lanes.update().reorder(lane, key_outer).vectorize(lane);
}

// The online form with bf16 dot products: q.k as in the f32 tile with
// head-dim pairs inside each lane; P.V vectorized across query rows too, its
// probabilities and V rows packed in key pairs per block, its tile (query
// vectors x head-dim rows) stored query-innermost for a state that is too.
void schedule_bf16_dot_stages(const Schedule& s, const SoftmaxStages& st, const LoopLevel& level,
                              const AttentionPipeline& p) {
  const Var d = p.vars.d, ii = p.tile_vars.ii, pair = p.tile_vars.pair;
  const int VW = s.vector_width;
  Func logits = st.logits, probs = st.probs, pv = st.pv, pv_sum = st.pv_sum;
  logits.compute_at(level);
  register_tile(s, logits, st.scores, ii, st.key, st.over_dim, s.register_vectors, s.register_rows,
                &st.dim_pair);
  schedule_row_statistic(s, st.max, st.max_lanes, st, level, p);
  probs.compute_at(level).vectorize(ii, VW);
  schedule_row_statistic(s, st.sum, st.sum_lanes, st, level, p);
  Var pair_row("pair_row"), pair_dim("pair_dim");
  Func(st.prob_pairs).compute_at(level).fuse(pair, ii, pair_row).vectorize(pair_row, 2 * VW);
  Func(st.v_pairs).compute_at(level).fuse(pair, d, pair_dim).vectorize(pair_dim, 2 * VW);
  pv.compute_at(level).reorder_storage(ii, d);
  pv_sum.reorder_storage(ii, d);
  register_tile(s, pv, pv_sum, ii, d, st.pv_keys, effective_pv_vectors(s), effective_pv_rows(s),
                &st.key_pair);
  if (s.unroll > 1) pv_sum.update().unroll(st.pv_keys, s.unroll);
}

void schedule_softmax_stages(const Schedule& s, const SoftmaxStages& st, const LoopLevel& level,
                             const AttentionPipeline& p, int head_dim) {
  const Var d = p.vars.d, ii = p.tile_vars.ii;
  const int VW = s.vector_width;
  Func logits = st.logits, probs = st.probs, pv = st.pv;
  if (s.bf16_dots) {
    schedule_bf16_dot_stages(s, st, level, p);
    return;
  }
  if (s.dot_axis == DotAxis::head_dim) {
    schedule_dots_along_head_dim(s, st, level, p);
    schedule_statistic_along_keys(s, st.max, st.over_keys, level, p);
    probs.compute_at(level).reorder_storage(st.key, ii).reorder(st.key, ii).vectorize(st.key, VW);
    schedule_statistic_along_keys(s, st.sum, st.over_keys, level, p);
  } else {
    logits.compute_at(level);
    register_tile(s, logits, st.scores, ii, st.key, st.over_dim, s.register_vectors,
                  s.register_rows);
    schedule_row_statistic(s, st.max, st.max_lanes, st, level, p);
    probs.compute_at(level).vectorize(ii, VW);
    schedule_row_statistic(s, st.sum, st.sum_lanes, st, level, p);
  }
  const int pv_vectors = head_dim_vectors(s, head_dim), pv_rows = effective_pv_rows(s);
  if (s.pv_chunk > 0) {
    pv.compute_at(level).vectorize(d, VW);
    chunked_register_tile(st.pv_sum, d, ii, st.over_keys, s.pv_chunk, VW, pv_vectors, pv_rows,
                          level, s.unroll);
    return;
  }
  pv.compute_at(level);
  register_tile(s, pv, st.pv_sum, d, ii, st.over_keys, pv_vectors, pv_rows);
  RVar keys = st.over_keys;
  if (splits_keys_by_page(s, p, 1)) {
    RVar key_page("key_page"), in_page("in_page");
    Func(st.pv_sum).update().split(st.over_keys, key_page, in_page, p.inputs.page_size);
    keys = in_page;
  }
  if (s.unroll > 1) Func(st.pv_sum).update().unroll(keys, s.unroll);
  if (s.prefetch_blocks > 0 && p.inputs.v_buffer.defined() && !st.value_prefetch.defined()) {
    Func(st.pv_sum).update().prefetch(p.inputs.v_buffer, st.over_keys, st.over_keys,
                                      prefetch_distance(s),
                                      Halide::PrefetchBoundStrategy::NonFaulting);
  }
  if (st.value_prefetch.defined()) {  // a paged cache: the lines of V each tile reads
    Func(st.value_prefetch).compute_at(Func(st.pv_sum), keys).unroll(p.vars.d);
  }
}

LoopLevel schedule_online(const Schedule& s, AttentionPipeline& p, int head_dim) {
  OnlineFuncs& f = p.online;
  LoopLevel tile = schedule_query_tiles(s, p, f, head_dim);
  const RVar rb = f.block_loop();
  const Var d = p.vars.d, ii = p.tile_vars.ii, ks = p.tile_vars.ks;
  if (s.bf16_dots) {  // as P.V's tile: query rows innermost
    f.state.compute_at(tile).reorder_storage(ii, d).vectorize(ii, s.vector_width);
    // Packed: the update's elements unrolled, each vector of rows reads one
    // max before the last element changes it, so its rescale is computed once.
    Var rows("state_rows"), row_lanes("state_row_lanes");
    f.state.update()
        .split(ii, rows, row_lanes, s.vector_width)
        .reorder(row_lanes, f.over_state.x, rows, rb, ks)
        .vectorize(row_lanes)
        .unroll(f.over_state.x);
  } else {
    f.state.compute_at(tile).vectorize(d, s.vector_width);
    f.state.update().reorder(d, ii, rb, ks).vectorize(d, s.vector_width);
  }
  if (s.kv_splits > 1) {
    if (has(s, ParallelLoop::kv_splits)) f.state.update().parallel(ks);
    for (Func merge : {f.split_max, f.merged}) {
      merge.compute_at(tile).vectorize(d, s.vector_width);
      merge.update().vectorize(d, s.vector_width);
    }
  }
  SoftmaxStages stages{f.logits,   f.scores, f.block_max,    f.probs,        f.block_sum,
                       f.block_pv, f.pv_sum, p.tile_vars.jj, f.over_block.x, f.over_dim.x};
  if (s.bf16_dots || s.int16_dots) {
    stages.over_dim = f.over_dim_pairs.y;
    stages.dim_pair = f.over_dim_pairs.x;
  }
  if (s.bf16_dots) {
    stages.pv_keys = f.over_key_pairs.y;
    stages.key_pair = f.over_key_pairs.x;
    stages.prob_pairs = f.prob_pairs;
    stages.v_pairs = f.v_pairs;
  }
  if (p.interleaved_lanes > 0) {
    stages.over_dim = f.over_dim_halves.x;
    stages.dim_half = f.over_dim_halves.y;
    stages.dim_chunk = f.over_dim_halves.z;
  }
  stages.key_prefetch = f.key_prefetch;
  stages.value_prefetch = f.value_prefetch;
  schedule_softmax_stages(s, stages, LoopLevel(f.state, rb), p, head_dim);
  return tile;
}

LoopLevel schedule_fused(const Schedule& s, AttentionPipeline& p, int head_dim) {
  FusedFuncs& f = p.fused;
  LoopLevel tile = schedule_query_tiles(s, p, f, head_dim);
  SoftmaxStages stages{f.logits,    f.scores,    f.row_max,      f.probs,       f.row_sum,
                       f.pv,        f.pv_sum,    p.vars.j,       f.over_keys.x, f.over_dim.x,
                       f.max_lanes, f.sum_lanes, f.over_groups.x};
  schedule_softmax_stages(s, stages, tile, p, head_dim);
  return tile;
}

// Runs the head and batch loops of one stage in parallel as the schedule lists.
template <typename StageOrFunc>
void parallelize_heads(const Schedule& s, StageOrFunc stage, const AttentionVars& v) {
  const bool heads = has(s, ParallelLoop::heads), batch = has(s, ParallelLoop::batch);
  if (heads && batch) {
    Var hb("hb");
    stage.fuse(v.h, v.b, hb).parallel(hb);
  } else if (heads) {
    stage.parallel(v.h);
  } else if (batch) {
    stage.parallel(v.b);
  }
}

// The unfused pipeline done well: each stage at root, parallel over heads
// and batch, vectorized along its innermost dim.
void schedule_materialized(const Schedule& s, AttentionPipeline& p) {
  MaterializedFuncs& f = p.materialized;
  const AttentionVars& v = p.vars;
  auto stage = [&](Func func, Var inner) {
    func.compute_root();
    std::vector<Halide::Stage> stages = {func};
    for (int u = 0; u < func.num_update_definitions(); ++u) stages.push_back(func.update(u));
    for (Halide::Stage st : stages) {
      parallelize_heads(s, st, v);
      st.vectorize(inner, s.vector_width, TailStrategy::GuardWithIf);
    }
  };
  stage(f.scores, v.j);
  stage(f.logits, v.j);
  stage(f.row_max, v.i);
  stage(f.exp_logits, v.j);
  stage(f.row_sum, v.i);
  stage(f.pv, v.d);
  parallelize_heads(s, p.output, v);
  p.output.vectorize(v.d, s.vector_width, TailStrategy::GuardWithIf);
  if (p.weights.defined()) {
    parallelize_heads(s, p.weights, v);
    p.weights.vectorize(v.j, s.vector_width, TailStrategy::GuardWithIf);
  }
}

}  // namespace

LoopLevel apply_x86(const Schedule& schedule, AttentionPipeline& pipeline, int head_dim) {
  switch (schedule.form) {
    case Form::materialized:
      schedule_materialized(schedule, pipeline);
      break;
    case Form::fused:
      return schedule_fused(schedule, pipeline, head_dim);
    case Form::online:
      return schedule_online(schedule, pipeline, head_dim);
    case Form::online_rows:  // not among the knob table's CPU forms: the check names it
    case Form::online_mma:
      throw check_legal_values(schedule, TargetKind::cpu, {KnobScope::attention}).value();
  }
  return LoopLevel::root();
}

}  // namespace attnforge::schedules
