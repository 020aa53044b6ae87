#include "tiled_forms.h"

#include <algorithm>
#include <limits>

#include "attention_terms.h"
#include "modifier_key_ranges.h"
#include "row_prefetch.h"
#include "softmax_exp.h"
#include "spec/kv_quantization.h"

namespace attnforge {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;

// What both tiled forms derive from a query tile: the scaled, transposed Q
// copy, the inputs with the scale folded into that copy, the tile's query
// range, and logits read at clamped positions.
class QueryTile {
 public:
  QueryTile(const AttentionSpec& spec, const AttentionInputs& inputs, const AttentionVars& v,
            const TileVars& t, const TileShape& shape, QueryTileFuncs& f)
      : in(inputs),
        terms(spec, in),
        groups(shape.grouped_heads),
        unclamped_steady_blocks(shape.unclamped_steady_blocks),
        lanes(shape.interleaved_lanes),
        kv_head(groups == 1 ? terms.kv_head(v.h) : v.h),
        i(query_of(t.it * shape.query_tile + t.ii)),
        query_head(groups == 1 ? v.h : v.h * groups + (t.it * shape.query_tile + t.ii) % groups),
        first(query_of(t.it * shape.query_tile)),
        last(Halide::min(query_of(t.it * shape.query_tile + shape.query_tile - 1),
                         inputs.q_len - 1)),
        row(Halide::min(i, inputs.q_len - 1)) {
    f.q_tile(t.ii, v.d, t.it, v.h, v.b) =
        AttentionTerms::to_f32(inputs.q(head_element(v.d), row, query_head, v.b)) * inputs.scale;
    if (shape.int16_pairs) define_query_levels(f, spec.head_dim, v, t);
    if (inputs.modifier_key_ranges.defined()) find_rule_keys(v, t, shape.query_tile);
  }

  // The tile's keys by the mask rule: its rows' entry in the table (of
  // every query head of the tile where the rule reads the head).
  void find_rule_keys(const AttentionVars& v, const TileVars& t, int query_tile) {
    // The queries of a tile that groups heads may start mid-group.
    const int rows = groups == 1 ? query_tile : (query_tile + groups - 1) / groups + 1;
    const int heads = in.key_ranges_per_head ? groups : 1;
    Expr values[kKeyRangeValues];
    for (int n = 0; n < kKeyRangeValues; ++n) {
      const auto value = static_cast<KeyRangeValue>(n);
      for (int g = 0; g < heads; ++g) {
        Expr head = 0;
        if (in.key_ranges_per_head) head = groups == 1 ? Expr(v.h) : v.h * groups + g;
        const Expr entry =
            key_range_of_rows(in.modifier_key_ranges, value, first,
                              std::min(rows, 1 << (kKeyRangeLevels - 1)), in.q_len, head, v.b);
        values[n] = g == 0 ? entry : combined_key_range(value, values[n], entry);
      }
    }
    rule_keys = {values[key_range_begin], values[key_range_end]};
  }

  // q * scale in int16 levels (TileShape::int16_pairs). A row of zeros has
  // the smallest normal step and levels of 0.
  static void define_query_levels(QueryTileFuncs& f, int head_dim, const AttentionVars& v,
                                  const TileVars& t) {
    constexpr float kTopLevel = 32767.0f;
    const RDom over_row(0, head_dim, "over_q_row");
    const Expr largest = Halide::maximum(Halide::abs(f.q_tile(t.ii, over_row, t.it, v.h, v.b)));
    f.q_step(t.ii, t.it, v.h, v.b) =
        Halide::max(largest, std::numeric_limits<float>::min()) / kTopLevel;
    const Expr level =
        Halide::round(f.q_tile(t.ii, v.d, t.it, v.h, v.b) / f.q_step(t.ii, t.it, v.h, v.b));
    f.q_levels(t.ii, v.d, t.it, v.h, v.b) =
        Halide::cast<int16_t>(Halide::clamp(level, -kTopLevel, kTopLevel));
  }

  // The head-dim element at position e of the Q copy, P.V and the state
  // (TileShape::interleaved_lanes): vector e / lanes holds the even elements
  // of 2 * lanes, or the odd ones. Divided by the lanes first, so that a
  // vector of positions is a ramp of elements whatever the vector's index.
  Expr head_element(const Expr& e) const {
    if (lanes == 0) return e;
    const Expr vector = e / lanes;
    return 2 * lanes * (vector / 2) + 2 * (e % lanes) + vector % 2;
  }
  // The position of head-dim element d in that order. (Each term grows with
  // d, so that the bounds of a range of d are those of its ends.)
  Expr position_of(const Expr& d) const {
    if (lanes == 0) return d;
    return 2 * lanes * (d / (2 * lanes)) + lanes * (d % 2) + d % (2 * lanes) / 2;
  }

  // Keys past Lk (a partial last block or tile) read the last key and are masked.
  Expr key(const Expr& j) const { return Halide::min(j, in.kv_len - 1); }
  // The key whose K and V rows stand for key j: a paged cache reads any key.
  // A contiguous one clamps; `likely` has Halide split the loops around the
  // clamp so that every block but the last reads without it.
  Expr cache_key(const Expr& j) const {
    if (in.page_size > 0) return j;
    return Halide::min(unclamped_steady_blocks ? Halide::likely(j) : j, in.kv_len - 1);
  }

  // Element d of key block kb's key rj (of KB) in k or v. A paged cache whose
  // pages tile the block is read by page and position, so that a loop over a
  // page's keys makes one table lookup.
  Expr block_row(const Halide::Func& cache, const Halide::Func& by_page, const Expr& d,
                 const Expr& kb, int KB, const Expr& rj, const Expr& b) const {
    const int P = in.page_size;
    if (P > 0 && KB % P == 0) return by_page(d, rj % P, kb * (KB / P) + rj / P, kv_head, b);
    return cache(d, cache_key(kb * KB + rj), kv_head, b);
  }

  // The scale of key rj of block kb in an 8-bit cache's `scales`, read as
  // block_row reads its rows.
  Expr block_scale(const Halide::Func& scales, const Halide::Func& by_page, const Expr& kb, int KB,
                   const Expr& rj, const Expr& b) const {
    const int P = in.page_size;
    if (P > 0 && KB % P == 0) return by_page(rj % P, kb * (KB / P) + rj / P, kv_head, b);
    return scales(cache_key(kb * KB + rj), kv_head, b);
  }

  // The masked logit of this tile's query row and key j; q_tile carries the
  // scale, so the dot product is already scaled.
  Expr logit(const Expr& dot, const Expr& j, const Expr& b) const {
    Expr value = terms.masked_logit(dot, key(j), row, query_head, b);
    return Halide::select(j < in.kv_len, value, kMaskedLogit);
  }

  const AttentionInputs in;
  const AttentionTerms terms;
  const int groups;  // TileShape::grouped_heads
  const bool unclamped_steady_blocks;
  const int lanes;  // TileShape::interleaved_lanes
  const Expr kv_head, i, query_head, first, last;
  const Expr row;  // i, clamped: rows past Lq read the last row and are never stored
  // A modifier's mask rule: the keys some row of the tile sees by it
  // (modifier_key_ranges.h); undefined without one.
  KeyRange<Expr> rule_keys;

 private:
  Expr query_of(const Expr& tile_row) const { return groups == 1 ? tile_row : tile_row / groups; }
};

// Where the output's (i, h) lies in the tiled Funcs: row ii of tile it, at
// head `head` (the KV head where tile rows group heads).
struct OutputRow {
  OutputRow(const AttentionVars& v, const TileShape& shape) {
    const int groups = shape.grouped_heads;
    const Expr r = groups == 1 ? Expr(v.i) : v.i * groups + v.h % groups;
    ii = r % shape.query_tile;
    it = r / shape.query_tile;
    head = groups == 1 ? Expr(v.h) : v.h / groups;
  }
  Expr ii, it, head;
};

}  // namespace

FusedFuncs build_fused(const AttentionSpec& spec, const AttentionInputs& inputs,
                       const AttentionVars& v, const TileVars& t, const TileShape& shape) {
  FusedFuncs f;
  const QueryTile tile(spec, inputs, v, t, shape, f);
  const AttentionInputs& in = tile.in;
  const AttentionTerms& terms = tile.terms;
  const Expr kvh = tile.kv_head;

  f.over_dim = RDom(0, spec.head_dim, "over_dim");
  const int G = kKeyGroup;
  f.over_keys = RDom(0, in.kv_len, "over_keys");
  f.over_groups = RDom(0, (in.kv_len + G - 1) / G, "over_groups");
  if (shape.skip_masked_blocks) {
    const Expr begin = terms.key_range_begin(tile.first, v.b);
    const Expr end = terms.key_range_end(tile.last, v.b);
    f.over_keys.where(f.over_keys.x >= begin && f.over_keys.x < end);
    f.over_groups.where(f.over_groups.x >= begin / G && f.over_groups.x < (end + G - 1) / G);
    const KeyRange<Expr>& rule = tile.rule_keys;
    if (rule.begin.defined()) {
      f.over_keys.where(f.over_keys.x >= rule.begin && f.over_keys.x < rule.end);
      f.over_groups.where(f.over_groups.x >= rule.begin / G &&
                          f.over_groups.x < (rule.end + G - 1) / G);
    }
  }
  const Halide::RVar rd = f.over_dim.x, rk = f.over_keys.x;
  // Keys of a group outside the tile's range are masked like any other.
  const Expr grouped_key = f.over_groups.x * G + t.lane;

  f.scores(t.ii, v.j, t.it, v.h, v.b) = 0.0f;
  f.scores(t.ii, v.j, t.it, v.h, v.b) += f.q_tile(t.ii, rd, t.it, v.h, v.b) *
                                         AttentionTerms::to_f32(in.k(rd, tile.key(v.j), kvh, v.b));
  f.logits(t.ii, v.j, t.it, v.h, v.b) = tile.logit(f.scores(t.ii, v.j, t.it, v.h, v.b), v.j, v.b);
  f.max_lanes(t.ii, t.lane, t.it, v.h, v.b) = kMaskedLogit;
  f.max_lanes(t.ii, t.lane, t.it, v.h, v.b) = Halide::max(
      f.max_lanes(t.ii, t.lane, t.it, v.h, v.b), f.logits(t.ii, grouped_key, t.it, v.h, v.b));
  Expr max_of_lanes = f.max_lanes(t.ii, 0, t.it, v.h, v.b);
  for (int lane = 1; lane < G; ++lane) {
    max_of_lanes = Halide::max(max_of_lanes, f.max_lanes(t.ii, lane, t.it, v.h, v.b));
  }
  f.row_max(t.ii, t.it, v.h, v.b) = max_of_lanes;
  f.probs(t.ii, v.j, t.it, v.h, v.b) =
      softmax_exp(f.logits(t.ii, v.j, t.it, v.h, v.b), f.row_max(t.ii, t.it, v.h, v.b));
  f.sum_lanes(t.ii, t.lane, t.it, v.h, v.b) = 0.0f;
  f.sum_lanes(t.ii, t.lane, t.it, v.h, v.b) += f.probs(t.ii, grouped_key, t.it, v.h, v.b);
  Expr sum_of_lanes = f.sum_lanes(t.ii, 0, t.it, v.h, v.b);
  for (int lane = 1; lane < G; ++lane) sum_of_lanes += f.sum_lanes(t.ii, lane, t.it, v.h, v.b);
  f.row_sum(t.ii, t.it, v.h, v.b) = sum_of_lanes;
  f.pv_sum(v.d, t.ii, t.it, v.h, v.b) = 0.0f;
  f.pv_sum(v.d, t.ii, t.it, v.h, v.b) +=
      f.probs(t.ii, rk, t.it, v.h, v.b) * AttentionTerms::to_f32(in.v(v.d, rk, kvh, v.b));
  f.pv(v.d, t.ii, t.it, v.h, v.b) = f.pv_sum(v.d, t.ii, t.it, v.h, v.b);

  const OutputRow out(v, shape);
  const Expr row_sum = f.row_sum(out.ii, out.it, out.head, v.b);
  f.output(v.d, v.i, v.h, v.b) =
      terms.row_output(f.pv(v.d, out.ii, out.it, out.head, v.b) / row_sum,
                       f.row_max(out.ii, out.it, out.head, v.b), row_sum);
  return f;
}

namespace {

// One running state's accumulator element d, max and sum.
struct StateValues {
  Expr acc, max, sum;
};

StateValues state_at(const OnlineFuncs& f, const Expr& d, const Expr& ii, const Expr& ks,
                     const Expr& it, const Expr& h, const Expr& b) {
  if (f.over_state.defined()) {
    return {f.state(d, ii, ks, it, h, b), f.state(f.max_at(), ii, ks, it, h, b),
            f.state(f.sum_at(), ii, ks, it, h, b)};
  }
  Halide::FuncRef state = f.state(d, ii, ks, it, h, b);
  return {state[0], state[1], state[2]};
}

// The output of the online form: the running state of the tile's only key
// split, or the states of all splits merged, normalized by the row sum.
// `at` is the position of the output's element d in the state.
void define_online_output(OnlineFuncs& f, const AttentionTerms& terms, const AttentionVars& v,
                          const TileVars& t, const TileShape& shape, const Expr& at) {
  const int splits = shape.kv_splits;
  const OutputRow out(v, shape);
  const Expr &ii = out.ii, &it = out.it, &head = out.head;
  Expr final_acc, final_max, final_sum;
  if (splits == 1) {
    const StateValues state = state_at(f, at, ii, 0, it, head, v.b);
    final_acc = state.acc;
    final_max = state.max;
    final_sum = state.sum;
  } else {
    // Each split's acc and sum rescaled to the largest split max, then added.
    f.over_splits = RDom(0, splits, "over_splits");
    const StateValues split = state_at(f, v.d, t.ii, f.over_splits.x, t.it, v.h, v.b);
    f.split_max(v.d, t.ii, t.it, v.h, v.b) = kMaskedLogit;
    f.split_max(v.d, t.ii, t.it, v.h, v.b) =
        Halide::max(f.split_max(v.d, t.ii, t.it, v.h, v.b), split.max);
    Expr weight = softmax_exp(split.max, f.split_max(v.d, t.ii, t.it, v.h, v.b));
    f.merged(v.d, t.ii, t.it, v.h, v.b) = {0.0f, 0.0f};
    f.merged(v.d, t.ii, t.it, v.h, v.b) = {
        f.merged(v.d, t.ii, t.it, v.h, v.b)[0] + split.acc * weight,
        f.merged(v.d, t.ii, t.it, v.h, v.b)[1] + split.sum * weight};
    final_acc = f.merged(at, ii, it, head, v.b)[0];
    final_max = f.split_max(at, ii, it, head, v.b);
    final_sum = f.merged(at, ii, it, head, v.b)[1];
  }
  f.output(v.d, v.i, v.h, v.b) = terms.row_output(final_acc / final_sum, final_max, final_sum);
}

// How one key block changes a running state: the larger max, and acc and sum
// rescaled to it. One of the two rescale factors is exactly 1, so it takes one exp.
struct StateUpdate {
  StateUpdate(const StateValues& old, const Expr& block_max) {
    Expr shrink = softmax_exp(Halide::min(old.max, block_max), Halide::max(old.max, block_max));
    Expr keep_old = old.max >= block_max;
    old_factor = Halide::select(keep_old, 1.0f, shrink);
    new_factor = Halide::select(keep_old, shrink, 1.0f);
    max = Halide::max(old.max, block_max);
  }
  Expr old_factor, new_factor, max;
};

// What the online form's steps share: the query tile, its shape and vars, and
// j, the key jj of block kb.
struct OnlineTile {
  OnlineTile(const AttentionSpec& spec, const AttentionVars& v, const TileVars& t,
             const TileShape& shape, const QueryTile& tile)
      : spec(spec),
        v(v),
        t(t),
        shape(shape),
        tile(tile),
        in(tile.in),
        KB(shape.key_block),
        j(t.kb * KB + t.jj) {}

  // Element d of key jj of block kb, as f32: of an 8-bit cache, its int8
  // level, and key_scale() the factor of the key's dot product.
  Expr key_row(const Expr& d) const {
    if (quantized()) {
      return AttentionTerms::to_f32(
          tile.block_row(in.k_levels, in.k_levels_by_page, d, t.kb, KB, t.jj, v.b));
    }
    return AttentionTerms::to_f32(tile.block_row(in.k, in.k_by_page, d, t.kb, KB, t.jj, v.b));
  }
  Expr key_scale() const {
    return tile.block_scale(in.k_scale, in.k_scale_by_page, t.kb, KB, t.jj, v.b);
  }
  // Element d of key rj of block kb in V, and the factor of its weight (as key_row).
  Expr value_row(const Expr& d, const Expr& rj) const {
    if (quantized()) {
      return AttentionTerms::to_f32(
          tile.block_row(in.v_levels, in.v_levels_by_page, d, t.kb, KB, rj, v.b));
    }
    return AttentionTerms::to_f32(tile.block_row(in.v, in.v_by_page, d, t.kb, KB, rj, v.b));
  }
  Expr value_scale(const Expr& rj) const {
    return tile.block_scale(in.v_scale, in.v_scale_by_page, t.kb, KB, rj, v.b);
  }
  // An 8-bit cache whose scales apply per key: q.k in order and P.V in order.
  bool quantized() const { return in.k_levels.defined(); }

  const AttentionSpec& spec;
  const AttentionVars& v;
  const TileVars& t;
  const TileShape& shape;
  const QueryTile& tile;
  const AttentionInputs& in;
  const int KB;  // TileShape::key_block
  const Expr j;
};

// Restricts the update's loops to the key blocks that a tile's rows can see.
void skip_masked_blocks(RDom& update_loops, const OnlineTile& o, const Expr& block) {
  const AttentionTerms& terms = o.tile.terms;
  Expr block_first = block * o.KB;
  const bool any = o.shape.skip_at_any_length;
  const Expr end =
      any ? terms.key_range_end_any_length(o.tile.last) : terms.key_range_end(o.tile.last, o.v.b);
  const Expr begin = any ? terms.key_range_begin_any_length(o.tile.first)
                         : terms.key_range_begin(o.tile.first, o.v.b);
  update_loops.where(block_first < end && block_first + o.KB > begin);
  const KeyRange<Expr>& rule = o.tile.rule_keys;
  if (rule.begin.defined()) {
    update_loops.where(block_first < rule.end && block_first + o.KB > rule.begin);
  }
}

// Declares the reduction domains and restricts the state update's loops to
// the blocks it runs. Returns the key block that the update's loop visits.
Expr define_reductions(OnlineFuncs& f, const OnlineTile& o) {
  const int KB = o.KB;
  const Expr blocks = (o.in.kv_len + KB - 1) / KB;
  const int splits = o.shape.kv_splits;

  // With kv_splits > 1, split ks runs blocks ks * per_split + rb, each into
  // its own state; the states are merged after.
  const Expr per_split = splits == 1 ? blocks : (blocks + splits - 1) / splits;
  f.head_dim = o.spec.head_dim;
  f.over_dim = RDom(0, o.spec.head_dim, "over_dim");
  f.over_block = RDom(0, KB, "over_block");
  // The state's update runs over the key blocks (and, packed, its elements).
  RDom update_loops;
  if (o.shape.packed_state) {
    f.over_state = RDom({{0, f.max_at() + 1}, {0, per_split}}, "over_state");
    update_loops = f.over_state;
  } else {
    f.over_blocks = RDom(0, per_split, "over_blocks");
    update_loops = f.over_blocks;
  }
  const Halide::RVar rb = f.block_loop();
  const Expr block = splits == 1 ? Expr(rb) : o.t.ks * per_split + rb;
  if (splits > 1) update_loops.where(block < blocks);
  if (o.shape.skip_masked_blocks) skip_masked_blocks(update_loops, o, block);
  return block;
}

// `value` rounded to bf16, to the nearest, ties to even (the instruction
// flushes subnormals to zero as well).
Expr rounded_to_bf16(const Expr& value, const TileShape& shape) {
  if (!shape.native_bf16_rounding) return Halide::cast(Halide::BFloat(16), value);
  // A pure extern call of this name becomes, vectorized, the AVX-512
  // runtime's vcvtne2ps2bf16x32 (fewer lanes are padded to 32).
  return Halide::Internal::Call::make(Halide::BFloat(16), "vcvtne2ps2bf16", {value},
                                      Halide::Internal::Call::PureExtern);
}

// q.k over bf16 pairs of head-dim elements, each pair one 32-bit element.
void add_qk_over_pairs(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  f.q_pairs(t.pair, t.ii, t.half, t.it, v.h, v.b) =
      rounded_to_bf16(f.q_tile(t.ii, 2 * t.half + t.pair, t.it, v.h, v.b), o.shape);
  f.over_dim_pairs = RDom({{0, 2}, {0, o.spec.head_dim / 2}}, "over_dim_pairs");
  const Halide::RVar rp = f.over_dim_pairs.x, rh = f.over_dim_pairs.y;
  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) +=
      AttentionTerms::to_f32(f.q_pairs(rp, t.ii, rh, t.it, v.h, v.b)) * o.key_row(2 * rh + rp);
}

// q.k of int16 levels over pairs of head-dim elements in int32: Q's levels
// against K's int8 levels widened to int16 (TileShape::int16_pairs).
void add_qk_over_int16_pairs(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  f.over_dim_pairs = RDom({{0, 2}, {0, o.spec.head_dim / 2}}, "over_dim_pairs");
  const Expr d = 2 * f.over_dim_pairs.y + f.over_dim_pairs.x;
  const Expr key_level = Halide::cast<int16_t>(
      o.tile.block_row(o.in.k_levels, o.in.k_levels_by_page, d, t.kb, o.KB, t.jj, v.b));
  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) +=
      Halide::cast<int32_t>(f.q_levels(t.ii, d, t.it, v.h, v.b)) * Halide::cast<int32_t>(key_level);
}

// q.k over interleaved lanes: the Q copy's head dim is in that order already,
// K's is read in order (TileShape::interleaved_lanes).
void add_qk_over_interleaved_lanes(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  const int L = o.shape.interleaved_lanes;
  f.over_dim_halves = RDom({{0, L}, {0, 2}, {0, o.spec.head_dim / (2 * L)}}, "over_dim_halves");
  const Halide::RVar rl = f.over_dim_halves.x, rp = f.over_dim_halves.y, rc = f.over_dim_halves.z;
  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) +=
      f.q_tile(t.ii, 2 * L * rc + L * rp + rl, t.it, v.h, v.b) *
      o.key_row(2 * L * rc + 2 * rl + rp);
}

// q.k over the head dim in order.
void add_qk_in_order(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  const Halide::RVar rd = f.over_dim.x;
  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) += f.q_tile(t.ii, rd, t.it, v.h, v.b) * o.key_row(rd);
}

void define_scores(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  if (o.shape.int16_pairs) {
    f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) = 0;
    add_qk_over_int16_pairs(f, o);
    return;
  }
  f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b) = 0.0f;
  if (o.shape.bf16_pairs) {
    add_qk_over_pairs(f, o);
  } else if (o.shape.interleaved_lanes > 0) {
    add_qk_over_interleaved_lanes(f, o);
  } else {
    add_qk_in_order(f, o);
  }
}

// The masked logits; with a shape that prefetches keys, plus the K row
// prefetch's 0, so that computing the logits issues it.
void define_logits(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionInputs& in = o.in;
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  Expr dot = f.scores(t.ii, t.jj, t.kb, t.it, v.h, v.b);
  if (o.shape.int16_pairs) {
    dot = Halide::cast<float>(dot) * f.q_step(t.ii, t.it, v.h, v.b);
  }
  if (o.quantized()) dot *= o.key_scale();
  Expr logit = o.tile.logit(dot, o.j, v.b);
  if (o.shape.prefetch_keys_ahead > 0 && in.k_row.defined()) {
    const Expr ahead = o.tile.cache_key(o.j + o.shape.prefetch_keys_ahead);
    f.key_prefetch(t.jj, t.kb, v.h, v.b) =
        prefetch_rows({{in.k_row_buffer, in.k_row(ahead, o.tile.kv_head, v.b), o.spec.head_dim}});
    logit += f.key_prefetch(t.jj, t.kb, v.h, v.b);
  }
  f.logits(t.ii, t.jj, t.kb, t.it, v.h, v.b) = logit;
}

// Per key block: the max of its logits, the probabilities against that max,
// and their sum.
void define_block_softmax(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  const Halide::RVar rj = f.over_block.x;
  f.block_max(t.ii, t.kb, t.it, v.h, v.b) = kMaskedLogit;
  f.block_max(t.ii, t.kb, t.it, v.h, v.b) = Halide::max(f.block_max(t.ii, t.kb, t.it, v.h, v.b),
                                                        f.logits(t.ii, rj, t.kb, t.it, v.h, v.b));
  f.probs(t.ii, t.jj, t.kb, t.it, v.h, v.b) = softmax_exp(
      f.logits(t.ii, t.jj, t.kb, t.it, v.h, v.b), f.block_max(t.ii, t.kb, t.it, v.h, v.b));
  f.block_sum(t.ii, t.kb, t.it, v.h, v.b) = 0.0f;
  f.block_sum(t.ii, t.kb, t.it, v.h, v.b) += f.probs(t.ii, rj, t.kb, t.it, v.h, v.b);
}

// P.V over bf16 pairs of keys, each pair of probabilities and of V elements
// one 32-bit element.
void add_pv_over_pairs(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionInputs& in = o.in;
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  f.prob_pairs(t.pair, t.ii, t.half, t.kb, t.it, v.h, v.b) =
      rounded_to_bf16(f.probs(t.ii, 2 * t.half + t.pair, t.kb, t.it, v.h, v.b), o.shape);
  f.v_pairs(t.pair, v.d, t.half, t.kb, v.h, v.b) =
      o.tile.block_row(in.v, in.v_by_page, v.d, t.kb, o.KB, 2 * t.half + t.pair, v.b);
  f.over_key_pairs = RDom({{0, 2}, {0, o.KB / 2}}, "over_key_pairs");
  const Halide::RVar kp = f.over_key_pairs.x, kh = f.over_key_pairs.y;
  f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b) +=
      AttentionTerms::to_f32(f.prob_pairs(kp, t.ii, kh, t.kb, t.it, v.h, v.b)) *
      AttentionTerms::to_f32(f.v_pairs(kp, v.d, kh, t.kb, v.h, v.b));
}

// P.V over the keys of a block in order, the state's head-dim element d of
// each V row; with a shape that prefetches values, plus the V line prefetch's 0.
void add_pv_in_order(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionInputs& in = o.in;
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  const Halide::RVar rj = f.over_block.x;
  // Packed, a thread computes P.V a chunk of the state at a time, and the
  // chunk of the sum and max rounds up past head_dim: it reads the last column.
  const Expr d = o.shape.packed_state ? Halide::min(v.d, o.spec.head_dim - 1) : Expr(v.d);
  Expr value = o.value_row(o.tile.head_element(d), rj);
  if (o.shape.prefetch_values_ahead > 0 && in.v_row.defined()) {
    // Per line, so that a tile of P.V prefetches the lines it reads: V's
    // rows, read a strip at a time, are evicted before another strip's loop.
    const int line = kCacheLineBytes / cache_element_bytes(o.spec);
    const Expr ahead = o.tile.cache_key(o.j + o.shape.prefetch_values_ahead);
    f.value_prefetch(v.d, t.jj, t.kb, v.h, v.b) =
        prefetch_rows({{in.v_row_buffer, in.v_row(ahead, o.tile.kv_head, v.b) + v.d * line, line}});
    value += f.value_prefetch(d / line, rj, t.kb, v.h, v.b);
  }
  Expr weight = f.probs(t.ii, rj, t.kb, t.it, v.h, v.b);
  if (o.quantized()) weight *= o.value_scale(rj);
  f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b) += weight * value;
}

void define_block_pv(OnlineFuncs& f, const OnlineTile& o) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b) = 0.0f;
  if (o.shape.bf16_pairs) {
    add_pv_over_pairs(f, o);
  } else {
    add_pv_in_order(f, o);
  }
  f.block_pv(v.d, t.ii, t.kb, t.it, v.h, v.b) = f.pv_sum(v.d, t.ii, t.kb, t.it, v.h, v.b);
}

// The key block that the state's update loop visits, and its max and sum.
struct VisitedBlock {
  Expr index, max, sum;
};

// The packed state: (e, ii, ks, it, h, b), e < head_dim the accumulator,
// then the sum, then the max; the update runs over e in order.
void update_packed_state(OnlineFuncs& f, const OnlineTile& o, const VisitedBlock& block) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  f.state(v.d, t.ii, t.ks, t.it, v.h, v.b) = Halide::select(v.d == f.max_at(), kMaskedLogit, 0.0f);
  const Halide::RVar re = f.over_state.x;
  const StateValues old = state_at(f, re, t.ii, t.ks, t.it, v.h, v.b);
  const StateUpdate next(old, block.max);
  const Expr bpv =
      f.block_pv(Halide::min(re, o.spec.head_dim - 1), t.ii, block.index, t.it, v.h, v.b);
  f.state(re, t.ii, t.ks, t.it, v.h, v.b) = Halide::select(
      re < f.sum_at(), old.acc * next.old_factor + bpv * next.new_factor,  //
      re == f.sum_at(), old.sum * next.old_factor + block.sum * next.new_factor, next.max);
}

// The Tuple state (acc, max, sum) per head-dim element. Max and sum are
// repeated in every head-dim lane, so the update needs no cycle between Funcs
// and vectorizes over d.
void update_tuple_state(OnlineFuncs& f, const OnlineTile& o, const VisitedBlock& block) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  f.state(v.d, t.ii, t.ks, t.it, v.h, v.b) = {0.0f, kMaskedLogit, 0.0f};
  const StateValues old = state_at(f, v.d, t.ii, t.ks, t.it, v.h, v.b);
  const StateUpdate next(old, block.max);
  f.state(v.d, t.ii, t.ks, t.it, v.h, v.b) = {
      old.acc * next.old_factor +
          f.block_pv(v.d, t.ii, block.index, t.it, v.h, v.b) * next.new_factor,
      next.max, old.sum * next.old_factor + block.sum * next.new_factor};
}

void define_state(OnlineFuncs& f, const OnlineTile& o, const Expr& block) {
  const AttentionVars& v = o.v;
  const TileVars& t = o.t;
  const VisitedBlock visited{block, f.block_max(t.ii, block, t.it, v.h, v.b),
                             f.block_sum(t.ii, block, t.it, v.h, v.b)};
  if (o.shape.packed_state) {
    update_packed_state(f, o, visited);
  } else {
    update_tuple_state(f, o, visited);
  }
}

}  // namespace

OnlineFuncs build_online(const AttentionSpec& spec, const AttentionInputs& inputs,
                         const AttentionVars& v, const TileVars& t, const TileShape& shape) {
  OnlineFuncs f;
  const QueryTile tile(spec, inputs, v, t, shape, f);
  const OnlineTile o(spec, v, t, shape, tile);
  // In dependency order; each step defines its Funcs' pure definitions
  // before their updates.
  const Expr block = define_reductions(f, o);
  define_scores(f, o);
  define_logits(f, o);
  define_block_softmax(f, o);
  define_block_pv(f, o);
  define_state(f, o, block);
  define_online_output(f, tile.terms, v, t, shape, tile.position_of(v.d));
  return f;
}

}  // namespace attnforge
