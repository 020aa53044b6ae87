#include "apply_mma.h"

#include "cuda_limits.h"

namespace attnforge::schedules {

namespace {

using Halide::MemoryType;
using Halide::TailStrategy;
using Halide::Var;

// A chain of mma with two alternating accumulator slots, as registers of one
// lane: every pure dimension but the lane unrolled, the reduction's steps
// outside them; its B words, four adjacent ones a load, per pair of steps.
void mma_chain_registers(Halide::Func chain, Halide::Func b_words, const MmaOnlineVars& m,
                         const Halide::RDom& steps) {
  chain.bound(m.slot, 0, 2).unroll(m.slot).unroll(m.tile).unroll(m.mi);
  chain.update()
      .reorder(m.lane, m.tile, m.mi, steps.x, steps.y)
      .unroll(steps.x)
      .unroll(steps.y)
      .unroll(m.tile)
      .unroll(m.mi);
  b_words.compute_at(chain, steps.y)
      .store_in(MemoryType::Register)
      .bound_extent(m.word, 4)
      .vectorize(m.word)
      .unroll(m.tile);
}

// The running state in one lane's registers: its update's tiles (a
// reduction dimension) unrolled inside the loop over key blocks.
void state_registers(Halide::Func f, const MmaOnlineVars& m, const Halide::RDom& blocks) {
  f.unroll(m.tile).unroll(m.mi);
  f.update().reorder(m.lane, m.mi, blocks.x, blocks.y).unroll(blocks.x).unroll(m.mi);
}

}  // namespace

bool emulates_tensor_cores(const Schedule& schedule, const Halide::Target& target) {
  return schedule.form == Form::online_mma && !target.has_gpu_feature();
}

Halide::Target emulated_target(const Halide::Target& target) {
  return target.with_feature(Halide::Target::CUDA);
}

void apply_mma_cuda(const Schedule& s, AttentionPipeline& p) {
  MmaOnlineFuncs& f = p.mma;
  const MmaOnlineVars& m = p.mma_vars;
  const AttentionVars& v = p.vars;
  const int warps = s.gpu_threads_y, rows = s.query_tile * warps;

  // The block's outputs pass once through shared memory: the lanes' words
  // are not the output's order.
  // Its threads are the lanes (x) and warps (y) of the state's stages.
  Var ib("ib"), ii("ii"), element("element"), chunk("chunk"), lane("lane"), warp("warp");
  p.output.split(v.i, ib, ii, rows, TailStrategy::GuardWithIf)
      .reorder(v.d, ii, ib, v.h, v.b)
      .fuse(v.d, ii, element)
      .split(element, chunk, lane, 32, TailStrategy::GuardWithIf)
      .split(chunk, chunk, warp, warps, TailStrategy::GuardWithIf)
      .reorder(lane, warp, chunk, ib, v.h, v.b)
      .gpu_blocks(ib, v.h, v.b)
      .gpu_threads(lane, warp);
  // Every block runs all its warps (the last one's rows past Lq read the
  // last query), so that its threads and shared memory are constant.
  f.lane_output.compute_at(p.output, ib)
      .bound_extent(m.warp, warps)
      .store_in(MemoryType::GPUShared)
      .reorder(m.word, m.tile, m.mi, m.lane, m.warp, v.h, v.b)
      .unroll(m.word)
      .unroll(m.tile)
      .unroll(m.mi)
      .gpu_threads(m.lane, m.warp);

  // Per lane: Q's words across the key loop, the state, and per key block
  // the scores, statistics, P words and P.V, all in registers.
  const Halide::LoopLevel lane_level(f.lane_output, m.lane);
  // Q's words, held across the key loop; a row half's four words of a pair
  // of steps are one load.
  Var word_vector("word_vector");
  f.q_fragments.compute_at(lane_level)
      .split(m.word, m.word, word_vector, 4)
      .vectorize(word_vector)
      .unroll(m.word)
      .unroll(m.mi);
  f.state.compute_at(lane_level);
  state_registers(f.state, m, f.over_blocks);
  const Halide::LoopLevel block_level(f.state, f.over_blocks.y);
  f.scores.compute_at(block_level);
  mma_chain_registers(f.scores, f.k_words, m, f.over_dim_steps);
  f.block_max.compute_at(block_level).unroll(m.half).unroll(m.mi);
  f.p_words.compute_at(block_level).unroll(m.half).unroll(m.tile).unroll(m.mi);
  // P.V per output tile, where the state's update takes it: one tile's
  // four accumulators live at a time besides the state's.
  f.block_pv.compute_at(f.state, f.over_blocks.x);
  mma_chain_registers(f.block_pv, f.v_words, m, f.over_key_steps);

  // V^T: a pre-pass over V, reading along the head dim.
  Var d_block("d_block"), pair_block("pair_block"), d_thread("d_thread"),
      pair_thread("pair_thread");
  f.v_pairs.compute_root().gpu_tile(v.d, m.pair, d_block, pair_block, d_thread, pair_thread, 32,
                                    warps, TailStrategy::GuardWithIf);
}

// Plain loops: unrolled, the emulated mma's sums would make every kernel
// minutes to compile.
void apply_mma_emulated(AttentionPipeline& p) {
  MmaOnlineFuncs& f = p.mma;
  for (Halide::Func func : {f.v_pairs, f.q_fragments, f.scores, f.block_max, f.p_words, f.block_pv,
                            f.state, f.lane_output, p.output}) {
    func.compute_root();
  }
}

}  // namespace attnforge::schedules
