// The online form on tensor cores: flash-style attention whose q.k and P.V
// are mma.m16n8k16 tiles (tensor_core_calls.h), for f16 and bf16 storage
// with f32 softmax. A warp owns 16 x warp_tiles query rows; each lane
// (4g + t) holds its fragments' words, so the lane is a dimension of every
// Func here and the word layout is part of the algorithm.
//
// Keys: a block of key_block keys is key_block / 8 score tiles. Score tile n's
// column c is key 32 (n / 4) + 8 (c / 2) + 2 (n % 4) + c % 2 of its block, so
// that the lane holding a P word (a pair of keys) also passes, as P.V's B
// operand, the four adjacent words of V^T (pairs of keys) that one 128-bit
// load reads (mma_fragments.h's choice of words).
#pragma once

#include <Halide.h>

#include "attention_inputs.h"
#include "spec/attention_spec.h"

namespace attnforge {

struct MmaTileShape {
  int warp_tiles = 1;  // 16-row query tiles per warp
  int key_block = 64;  // keys per block: a multiple of 32
  bool skip_masked_blocks = true;
  // Skip by the positional mask at any key length (no key length read in
  // the key loop's bounds), as TileShape's.
  bool skip_at_any_length = false;
  // On a target without CUDA: the mma and the lane-group reductions are
  // emulated, evaluating their operands at the other lanes (tests on the CPU).
  bool emulated = false;
  // q, k, v and the output are the 16 bits of their storage type (bf16 on
  // CUDA, whose back end takes no bf16); a bias is read as f32.
  bool storage_bits = false;
};

struct MmaOnlineVars {
  Halide::Var lane{"lane"};    // 4 g + t
  Halide::Var tile{"tile"};    // score tile (8 keys) or output tile (8 head-dim elements)
  Halide::Var mi{"mi"};        // 16-row query tile of the warp
  Halide::Var kb{"kb"};        // key block
  Halide::Var warp{"warp"};    // warp_tiles x 16 query rows
  Halide::Var slot{"slot"};    // of two alternating accumulator slots
  Halide::Var word{"word"};    // a lane's word of a fragment, or of a result (e + 2 half)
  Halide::Var half{"half"};    // row g (0) or g + 8 (1) of a tile
  Halide::Var pair{"pair"};    // pair of keys (2 pair, 2 pair + 1) of V^T
  Halide::Var steps{"steps"};  // pair of mma steps along the head dim or keys
};

struct MmaOnlineFuncs {
  // (pair, d, kv head, b) u32: V^T, V at keys 2 pair and 2 pair + 1 in one
  // word; the pre-pass that makes P.V's B operand one load per four words.
  Halide::Func v_pairs{"v_pairs"};
  // (word, lane, mi, warp, h, b) u32: the lane's A words of Q for every
  // step along the head dim (4 per step), held across the key loop:
  // word 8 p + 4 half + w of pair p of steps (mma_online_form.cpp).
  Halide::Func q_fragments{"q_fragments"};
  // (word, lane, tile, steps, kb, h, b) u32: the lane's four adjacent words
  // of its key's K row for two steps; (word, lane, tile, steps, kb, h, b)
  // likewise of V^T for P.V's output tile.
  Halide::Func k_words{"k_words"}, v_words{"v_words"};
  // (lane, tile, mi, kb, warp, h, b, slot) Tuple of 4 f32: q.k of score tile
  // `tile`, a chain of head_dim / 16 mma in alternating slots (ends in 0).
  Halide::Func scores{"scores"};
  // (half, lane, mi, kb, warp, h, b): the block's row max over the lane
  // group, and the lane's own part of the row sum of its P words.
  Halide::Func block_max{"block_max"}, block_sum{"block_sum"};
  // (half, lane, tile, mi, kb, warp, h, b) u32: the lane's P word of score tile
  // `tile`: its two exp(logit - block max) in the storage type.
  Halide::Func p_words{"p_words"};
  // (lane, tile, mi, kb, warp, h, b, slot) Tuple of 4 f32: P.V of output
  // tile `tile` (8 head-dim elements), key_block / 16 mma (ends in slot 0).
  Halide::Func block_pv{"block_pv"};
  // (lane, tile, mi, warp, h, b) Tuple of 4 f32: the running state, updated
  // per key block in place. Tiles below head_dim / 8 are the output
  // accumulators; tile head_dim / 8 holds (max of row g, of row g + 8, the
  // lane's sum of row g, of row g + 8).
  Halide::Func state{"state"};
  // (word, lane, tile, mi, warp, h, b) f32: the lane's normalized outputs.
  // With .lse, the stats tile's words e + 2 half hold row half's log-sum-exp
  // (+inf where it saw no key).
  Halide::Func lane_output{"lane_output"};
  // (d, i, h, b) storage dtype; with .lse, a Tuple of that and the row's lse.
  Halide::Func output{"output"};
  Halide::RDom over_dim_steps;  // scores: (step in pair, pair of steps) along the head dim
  Halide::RDom over_key_steps;  // block_pv: (step in pair, pair of steps) along the block
  Halide::RDom over_blocks;     // state: (tile, key block)
  int head_dim = 0;
  int stats_tile() const { return head_dim / 8; }
};

MmaOnlineFuncs build_mma_online(const AttentionSpec& spec, const AttentionInputs& inputs,
                                const AttentionVars& v, const MmaOnlineVars& m,
                                const MmaTileShape& shape);

}  // namespace attnforge
