// The fused and online forms of attention, per query tile. Tile sizes are
// part of their structure (a query tile's scores, a key block's statistics),
// so they take them as parameters; everything else is left to schedules/.
//
// Index names: i = it * query_tile + ii (query), j = kb * key_block + jj (key).
// With grouped_heads = G > 1, a tile's rows are the (query, head) pairs of one
// KV group, r = it * query_tile + ii = i * G + head % G, and the Funcs' head
// dim is the KV head: every K/V row a tile reads serves all G query heads.
#pragma once

#include <Halide.h>

#include "attention_inputs.h"
#include "spec/attention_spec.h"

namespace attnforge {

struct TileVars {
  Halide::Var ii{"ii"}, it{"it"};          // query row within its tile, query tile
  Halide::Var jj{"jj"}, kb{"kb"};          // key within its block, key block
  Halide::Var ks{"ks"};                    // key split (online form)
  Halide::Var lane{"lane"};                // key within its group (fused row statistics)
  Halide::Var pair{"pair"}, half{"half"};  // bf16 pairs: element 2 * half + pair
};

// The fused form's row max and sum take keys in groups of this many, one
// partial result per position in the group, combined at the end: a single
// running max or sum would be a chain of dependent operations, one per key.
constexpr int kKeyGroup = 4;

struct TileShape {
  int query_tile = 32;
  int key_block = 64;
  bool skip_masked_blocks = true;  // restrict key loops to blocks a tile can see
  int kv_splits = 1;               // online: key blocks split this many ways, merged after
  // online: the running state as one Func of head_dim + 2 values per row
  // (accumulator, then sum, then max) instead of a Tuple that repeats max and
  // sum for every head-dim element. A thread that owns a whole row then keeps
  // one max and one sum, and takes one exp per key block.
  bool packed_state = false;
  int grouped_heads = 1;  // query heads per tile row group (see the index names above)
  // online: q.k and P.V over bf16 pairs (pairs of head-dim elements, pairs of
  // keys), laid out so that each pair is one 32-bit element: the form of a
  // bf16 dot product that accumulates in f32. q * scale and the probabilities
  // that feed P.V are rounded to bf16.
  bool bf16_pairs = false;
  // bf16_pairs: round to bf16 with the CPU's instruction (vcvtne2ps2bf16,
  // through Halide's AVX-512 runtime), not Halide's integer emulation, which
  // it uses on every target but Sapphire Rapids.
  bool native_bf16_rounding = false;
  // online, an int8 K cache: q.k over pairs of head-dim elements in integers,
  // the form of an int16 dot product that accumulates in int32: q * scale in
  // int16 levels of a step per query row (its largest element 32767 steps),
  // against the K levels widened to int16. The levels' rounding is within
  // half a step; the int32 sums cannot overflow (512 * 32767 * 128 < 2^31).
  bool int16_pairs = false;
  // online: skip by the positional mask at any key length (a superset of the
  // blocks key padding leaves), so the key loop's bounds read no key length:
  // Halide 21's lowering of one-warp blocks loses symbols where they do.
  bool skip_at_any_length = false;
  // online, paged caches (AttentionInputs::k_row): q.k prefetches the K row
  // this many keys ahead, and P.V the lines of the V row it reads this many
  // keys ahead; 0: none.
  int prefetch_keys_ahead = 0;
  int prefetch_values_ahead = 0;
  // online, contiguous caches: Halide splits the key-block loop so that every
  // block but the last reads K and V without clamping the key. Off for GPU
  // schedules: the extra copy of a block's loops spills registers there.
  bool unclamped_steady_blocks = false;
  // online, bf16 K and V converted to f32 (0: off): a vector of this many
  // lanes takes the even or the odd elements of 2 * lanes consecutive
  // head-dim elements of a K or V row, so that one load of 2 * lanes values
  // is two f32 vectors, a shift and a blend (a widening load per vector is a
  // shuffle and a shift). The Q copy, P.V and the running state order their
  // head dim so; the output reads them back in order.
  int interleaved_lanes = 0;
};

// Shared by both forms: a scaled, transposed copy of each query tile, and the
// output read back from (d, ii, it) tile coordinates.
struct QueryTileFuncs {
  // (ii, d, it, h, b) f32, q * scale, ii innermost; with interleaved_lanes,
  // of each 2 * lanes elements the even ones, then the odd ones.
  Halide::Func q_tile{"q_tile"};
  // bf16_pairs: (p, ii, dh, it, h, b) bf16, q * scale at d = 2 dh + p.
  Halide::Func q_pairs{"q_pairs"};
  // int16_pairs: (ii, it, h, b) f32, the step of a row's levels, and
  // (ii, d, it, h, b) int16, q * scale in those steps.
  Halide::Func q_step{"q_step"}, q_levels{"q_levels"};
};

// fused: per query tile, one pass over all keys for the row max, then exp-sum and P.V.
struct FusedFuncs : QueryTileFuncs {
  Halide::Func scores{"scores"};        // (ii, j, it, h, b) q . k reduction
  Halide::Func logits{"logits"};        // (ii, j, it, h, b) biased, masked
  Halide::Func max_lanes{"max_lanes"};  // (ii, lane, it, h, b) max over keys g * kKeyGroup + lane
  Halide::Func row_max{"row_max"};      // (ii, it, h, b) max over lanes
  Halide::Func probs{"probs"};          // (ii, j, it, h, b) exp(logit - row max)
  Halide::Func sum_lanes{"sum_lanes"};  // (ii, lane, it, h, b) like max_lanes
  Halide::Func row_sum{"row_sum"};      // (ii, it, h, b)
  Halide::Func pv_sum{"pv_sum"};        // (d, ii, it, h, b) P.V reduction
  Halide::Func pv{"pv"};                // (d, ii, it, h, b)
  Halide::Func output{"output"};        // (d, i, h, b) storage dtype
  Halide::RDom over_dim, over_keys;
  Halide::RDom over_groups;  // key groups of max_lanes and sum_lanes
};

// online: flash style. Per key block: block max, probabilities, block sum and
// P.V; then one update of the running (acc, max, sum) state per block.
struct OnlineFuncs : QueryTileFuncs {
  // (ii, jj, kb, it, h, b) q . k reduction; int16_pairs: int32, in the
  // row's steps times K's levels
  Halide::Func scores{"scores"};
  Halide::Func logits{"logits"};        // (ii, jj, kb, it, h, b) biased, masked
  Halide::Func block_max{"block_max"};  // (ii, kb, it, h, b)
  Halide::Func probs{"probs"};          // (ii, jj, kb, it, h, b)
  Halide::Func block_sum{"block_sum"};  // (ii, kb, it, h, b)
  Halide::Func pv_sum{"pv_sum"};        // (d, ii, kb, it, h, b) P.V reduction
  Halide::Func block_pv{"block_pv"};    // (d, ii, kb, it, h, b)
  // bf16_pairs: (p, ii, jh, kb, it, h, b) bf16 probability of key jj = 2 jh + p,
  // and (p, d, jh, kb, h, b) that key's V row, pairs of keys interleaved.
  Halide::Func prob_pairs{"prob_pairs"}, v_pairs{"v_pairs"};
  // Only with a shape that prefetches (row_prefetch.h), each 0: (jj, kb, h, b)
  // prefetching the K row prefetch_keys_ahead keys past key jj, read by
  // logits; (line, jj, kb, h, b) prefetching cache line `line` of the V row
  // prefetch_values_ahead keys past it, read by P.V with the V elements of that line.
  Halide::Func key_prefetch{"key_prefetch"}, value_prefetch{"value_prefetch"};
  // (d, ii, ks, it, h, b) Tuple(acc, max, sum); packed: (e, ii, ks, it, h, b)
  // with e < head_dim the accumulator, e == sum_at() the sum, e == max_at() the max.
  Halide::Func state{"state"};
  Halide::Func split_max{"split_max"};  // (d, ii, it, h, b); only with kv_splits > 1
  Halide::Func merged{"merged"};        // (d, ii, it, h, b) Tuple(acc, sum); likewise
  Halide::Func output{"output"};        // (d, i, h, b) storage dtype
  Halide::RDom over_dim, over_block, over_blocks, over_splits;
  // bf16_pairs: q.k over (p, dh) and P.V over (p, jh), pairs innermost;
  // int16_pairs: q.k over (p, dh).
  Halide::RDom over_dim_pairs, over_key_pairs;
  // interleaved_lanes: q.k over (lane, half, chunk): K's element
  // chunk * 2 lanes + 2 lane + half against the Q copy's chunk * 2 lanes + half * lanes + lane.
  Halide::RDom over_dim_halves;
  // packed: the update's (e, block) loops; e runs in order, so every element
  // reads the max before the last one updates it.
  Halide::RDom over_state;
  int head_dim = 0;
  // The state update's loop over key blocks.
  Halide::RVar block_loop() const { return over_state.defined() ? over_state.y : over_blocks.x; }
  int sum_at() const { return head_dim; }
  int max_at() const { return head_dim + 1; }
};

FusedFuncs build_fused(const AttentionSpec& spec, const AttentionInputs& inputs,
                       const AttentionVars& v, const TileVars& t, const TileShape& shape);

OnlineFuncs build_online(const AttentionSpec& spec, const AttentionInputs& inputs,
                         const AttentionVars& v, const TileVars& t, const TileShape& shape);

}  // namespace attnforge
