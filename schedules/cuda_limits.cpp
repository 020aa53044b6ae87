#include "cuda_limits.h"

#include <algorithm>

namespace attnforge::schedules {

CudaThreads cuda_threads(const Schedule& s, int head_dim) {
  CudaThreads t;
  t.x = s.gpu_threads_x;
  t.y = s.gpu_threads_y;
  if (t.x <= 0 || t.y <= 0) return t;
  t.rows_per_thread = s.query_tile / t.y;
  if (s.form == Form::online_rows) {  // x runs over key splits: a thread has whole rows
    t.dims_per_thread = head_dim;
    t.keys_per_thread = s.key_block;
    return t;
  }
  t.dims_per_thread = head_dim / t.x;
  t.keys_per_thread = s.key_block / t.x;
  return t;
}

bool cuda_warp_block(const Schedule& s) {
  return s.form == Form::online && s.gpu_threads_x == kCudaWarp && s.gpu_threads_y == 1;
}

int cuda_input_alignment(const Schedule& s) {
  // online_mma reads four words of a K row (and of V^T) per load.
  return s.form == Form::online_rows || s.form == Form::online_mma ? kCudaVectorBytes : 1;
}

int cuda_shared_row_pad(const Schedule& s) {
  return cuda_warp_block(s) ? 1 : 0;
}

int cuda_shared_bytes(const Schedule& s, int head_dim) {
  const int rows = s.query_tile, keys = s.key_block;
  int floats = 0;
  switch (s.form) {
    case Form::online:
      if (cuda_warp_block(s)) {
        // The state is in registers: the Q tile, logits and probabilities,
        // two row statistics and the staged K (padded) and V blocks.
        const int padded = rows + cuda_shared_row_pad(s);
        floats = padded * head_dim + 2 * padded * keys + 2 * rows;
        if (s.gpu_stage_kv) floats += head_dim * (2 * keys + kCudaStagedRowPad);
        break;
      }
      // Q tile, the running (acc, max, sum) per element, logits and
      // probabilities of a key block, two row statistics and their partials
      // per lane, and the staged K and V blocks. An upper bound: Halide may
      // pack some of them into the same bytes.
      floats = 4 * rows * head_dim + 2 * rows * keys + 2 * rows + 2 * rows * s.gpu_threads_x;
      if (s.gpu_stage_kv) floats += 2 * head_dim * keys;
      break;
    case Form::online_rows:  // registers and L1 only
    case Form::fused:        // no CUDA schedule
      break;
    case Form::online_mma:  // the lanes' normalized outputs, once at the end
      floats = s.query_tile * s.gpu_threads_y * head_dim;
      break;
    case Form::materialized:
      // Every stage reads and writes global memory; q.k may stage its K and
      // Q rows, each padded.
      if (s.gpu_stage_kv) floats = head_dim * (keys + rows + 2 * kCudaStagedRowPad);
      break;
  }
  return 4 * floats;
}

int cuda_register_values(const Schedule& s, int head_dim) {
  const CudaThreads t = cuda_threads(s, head_dim);
  if (s.form == Form::online_mma) {
    // Per 16-row tile a lane holds its state (head_dim / 2 + 4), its Q words
    // (head_dim / 4), a block's scores and P words (key_block / 2 and / 4).
    const int tiles = s.query_tile / 16;
    return tiles * (head_dim / 2 + 4 + head_dim / 4 + s.key_block / 2 + s.key_block / 4);
  }
  if (s.form == Form::online_rows) {
    // Per row: its packed state (head_dim + 2), a chunk of a key block's P.V
    // and its logits; per thread, the block's K rows. The Q row is in local memory.
    const int per_row = head_dim + 2 + std::min(head_dim, kCudaRowPvChunk) + s.key_block;
    return t.rows_per_thread * per_row + s.key_block * head_dim;
  }
  // The larger of a thread's q.k and P.V accumulator chunks.
  const int chunk = t.rows_per_thread * std::max(t.dims_per_thread, t.keys_per_thread);
  // A warp block's lanes also hold their slice of the (acc, max, sum) state.
  return cuda_warp_block(s) ? chunk + 3 * t.rows_per_thread * t.dims_per_thread : chunk;
}

double cuda_occupancy(int threads, int registers, int shared_bytes, const SmLimits& sm) {
  constexpr int kWarp = 32, kRegisterGranule = 256, kReservedSharedPerBlock = 1024;
  const int warps = (threads + kWarp - 1) / kWarp;
  const int max_warps = sm.threads / kWarp;
  if (warps < 1 || warps > max_warps) return 0.0;
  const int per_warp =
      (std::max(registers, 1) * kWarp + kRegisterGranule - 1) / kRegisterGranule * kRegisterGranule;
  int blocks = std::min({sm.blocks, max_warps / warps, sm.registers / (per_warp * warps)});
  if (shared_bytes > 0)
    blocks = std::min(blocks, sm.shared_bytes / (shared_bytes + kReservedSharedPerBlock));
  return static_cast<double>(blocks * warps) / max_warps;
}

}  // namespace attnforge::schedules
