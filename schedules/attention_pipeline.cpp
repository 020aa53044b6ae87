#include "attention_pipeline.h"

#include <algorithm>

#include "algorithm/attention_terms.h"
#include "cuda_limits.h"
#include "spec/kv_quantization.h"

namespace attnforge::schedules {

AttentionPipeline build_pipeline(const AttentionSpec& spec, const AttentionInputs& inputs,
                                 const Schedule& schedule, bool emulated_mma, bool storage_bits,
                                 bool native_bf16_rounding) {
  AttentionPipeline p;
  p.form = schedule.form;
  p.inputs = inputs;
  // online_rows: each query row is a tile of its own (query_tile is rows per
  // GPU block), so a row's state is addressed without a division by the tile.
  const bool rows = schedule.form == Form::online_rows;
  TileShape shape;
  shape.query_tile = rows ? 1 : schedule.query_tile;
  shape.key_block = schedule.key_block;
  shape.skip_masked_blocks = schedule.skip_masked_blocks;
  shape.kv_splits = schedule.kv_splits;
  // One max and one sum per row where a thread owns whole rows (online_rows)
  // or whole vectors of rows (bf16 dot products keep the state row-innermost):
  // each key block's rescale is then one exp per row, not per head-dim element.
  shape.packed_state = rows || schedule.bf16_dots;
  if (schedule.group_heads && !is_gpu_schedule(schedule)) shape.grouped_heads = spec.group_size();
  shape.bf16_pairs = schedule.bf16_dots;
  shape.native_bf16_rounding = schedule.bf16_dots && native_bf16_rounding;
  shape.int16_pairs = schedule.int16_dots;
  shape.unclamped_steady_blocks = !is_gpu_schedule(schedule);
  shape.skip_at_any_length = spec.key_padding && cuda_warp_block(schedule);
  // A paged cache's rows, read through its table, lose the hardware
  // prefetchers' stream at every page, and Halide's prefetch of a box would
  // cover the whole cache; a contiguous cache read from memory (caches
  // evicted) decodes 8-10% faster so too. So q.k along the head dim prefetches K rows about
  // 8 KB ahead, a quarter of an L1 cache (farther, measured slower: they are
  // evicted before they are read), and P.V the V lines that its tile reads, as
  // far ahead as a contiguous cache's prefetch. (V rows prefetched with K were
  // gone again by the time P.V's strips reached them.)
  if (schedule.prefetch_blocks > 0 && schedule.dot_axis == DotAxis::head_dim &&
      !schedule.bf16_dots && !is_gpu_schedule(schedule)) {
    constexpr int kKeyPrefetchBytes = 8 * 1024;
    const int row_bytes = spec.head_dim * cache_element_bytes(spec);
    shape.prefetch_keys_ahead = std::max(1, kKeyPrefetchBytes / row_bytes);
    shape.prefetch_values_ahead = prefetch_distance(schedule);
  }
  // bf16 K and V rows read two vectors per load where q.k and P.V take one
  // vector of the head dim at a time (the online form's dots along the head
  // dim): decoding B1 H32 Hkv8 D128 bf16 on Zen 3, caches evicted, timed in
  // one process against widening loads: 0.95x-0.98x the time.
  if (schedule.form == Form::online && spec.dtype == DType::bf16 && !spec.quantized_kv() &&
      !schedule.bf16_dots && schedule.dot_axis == DotAxis::head_dim && !is_gpu_schedule(schedule) &&
      spec.head_dim % (2 * schedule.vector_width) == 0) {
    shape.interleaved_lanes = schedule.vector_width;
  }
  p.grouped_heads = shape.grouped_heads;
  p.interleaved_lanes = shape.interleaved_lanes;
  switch (schedule.form) {
    case Form::materialized:
      p.materialized = build_materialized(spec, inputs, p.vars);
      p.output = p.materialized.output;
      p.weights = p.materialized.weights;
      break;
    case Form::fused:
      p.fused = build_fused(spec, inputs, p.vars, p.tile_vars, shape);
      p.output = p.fused.output;
      break;
    case Form::online:
    case Form::online_rows:
      p.online = build_online(spec, inputs, p.vars, p.tile_vars, shape);
      p.output = p.online.output;
      break;
    case Form::online_mma: {
      MmaTileShape mma;
      mma.warp_tiles = schedule.query_tile / 16;
      mma.key_block = schedule.key_block;
      mma.skip_masked_blocks = schedule.skip_masked_blocks;
      mma.skip_at_any_length = spec.key_padding && !emulated_mma;
      mma.emulated = emulated_mma;
      mma.storage_bits = storage_bits;
      p.mma = build_mma_online(spec, inputs, p.vars, p.mma_vars, mma);
      p.output = p.mma.output;
      break;
    }
  }
  return p;
}

}  // namespace attnforge::schedules
