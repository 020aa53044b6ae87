// A schedule as data: which algorithm form runs and how its loops are tiled,
// vectorized and parallelized. Its knobs are described once, in knob_table.h:
// the JSON form that round-trips, canonical() and the search space derive
// from that table. space.h says which values fit a spec and target;
// apply_x86.h, apply_cuda.h and apply_layer_x86.h turn a schedule into Halide
// directives.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/field_error.h"

namespace attnforge::schedules {

// materialized: scores, row max, exp-sum and output over the whole Lq x Lk matrix.
// fused: per query tile, a pass over keys for the row max, then exp-sum and P.V.
// online: per query tile, flash style: running max, sum and rescaled accumulator per key block.
// online_rows (CUDA): online with one query row per thread, its whole running
// state in that thread's registers (packed: one max and sum per row).
enum class Form { materialized, fused, online, online_rows };

// Loops that may run in parallel (outermost first when several are fused).
enum class ParallelLoop { batch, heads, query_tiles, kv_splits };

// What the q.k product vectorizes along: the tile's query rows, for tiles of
// many rows (vector_width x register_vectors rows at a time, register_rows
// keys); or the head dim, one horizontal sum per score, for tiles of a few
// rows, as in decoding (register_rows rows x register_vectors keys at a time,
// row statistics vectorized along the keys).
enum class DotAxis { queries, head_dim };

// Where the scaled copy of Q that the q.k product reads is computed: per query
// tile, or once for all tiles.
enum class StoreLevel { tile, root };

// Thrown for a schedule that cannot be applied; field() names the knob.
class ScheduleError : public FieldError {
 public:
  ScheduleError(std::string field, const std::string& message)
      : FieldError("schedule", std::move(field), message) {}
};

struct Schedule {
  Form form = Form::online;
  int query_tile = 32;    // query rows per tile
  int key_block = 64;     // keys per block (online), or per chunk (fused)
  int vector_width = 8;   // f32 lanes; 8 on AVX2, 8 or 16 on AVX-512
  int unroll = 1;         // extra unrolling of the key loop
  int register_rows = 4;  // register tile of the matrix products: vectors x rows
  int register_vectors = 2;
  // The P.V product's own register tile (head-dim vectors x query rows); 0:
  // the same as the q.k tile. P.V reads each V vector once per row, so a tile
  // wider in the head dim saves loads that q.k, vectorized over queries, does not need.
  int pv_rows = 0;
  int pv_vectors = 0;
  // Keys per P.V chunk; 0: one pass. Every register tile of a chunk runs
  // before the next chunk, so the chunk's V rows and probabilities stay in L1
  // instead of streaming from L2 once per tile; a tile's accumulators are
  // loaded before each chunk and stored after it.
  int pv_chunk = 0;
  std::vector<ParallelLoop> parallel = {ParallelLoop::batch, ParallelLoop::heads,
                                        ParallelLoop::query_tiles};
  int kv_splits = 1;                        // split keys this many ways (short Lq), merged after
  StoreLevel q_copy_at = StoreLevel::tile;  // JSON reads the former name "intermediates" too
  bool skip_masked_blocks = true;           // skip key blocks a whole query tile cannot see
  // CPU: a tile's rows are the (query, head) pairs of one KV group (GQA,
  // MQA), so each K/V row it reads serves every query head of the group.
  bool group_heads = false;
  DotAxis dot_axis = DotAxis::queries;  // CPU
  // CPU, online form with dot_axis head_dim: prefetch K and V this many key
  // blocks ahead of the rows being read (0: none), a cache line at a time
  // as the rows stream; a paged cache's rows through its table.
  int prefetch_blocks = 0;
  // CPU, online form, bf16 storage: q.k and P.V as bf16 dot products that
  // accumulate in f32 (vdpbf16ps: two multiply-adds per f32 lane where an FMA
  // does one), on targets with AVX512_BF16 (avx512_zen4, avx512_sapphirerapids).
  // q * scale and the probabilities that feed P.V are rounded to bf16.
  bool bf16_dots = false;

  // A layer's projection GEMMs (0 outside a layer schedule): register tiles of
  // vectors x rows, row blocks kept in cache while every weight column passes,
  // and whether Q is projected per query tile, where the attention reads it.
  int projection_vectors = 0;
  int projection_rows = 0;
  int projection_block = 0;
  int projection_fuse_q = 0;

  // CUDA (0 in CPU schedules): a block's threads along the head dim and key
  // lanes (x) and along query rows (y), and whether each K/V block is staged
  // in shared memory before the matrix products read it.
  int gpu_threads_x = 0;
  int gpu_threads_y = 0;
  int gpu_stage_kv = 0;

  nlohmann::json to_json() const;
  // Throws ScheduleError naming the first unknown or ill-typed field.
  static Schedule from_json(const nlohmann::json& json);

  bool operator==(const Schedule& other) const;
  bool operator!=(const Schedule& other) const { return !(*this == other); }
};

// The same schedule with the knobs its form does not read set to their
// defaults, so one kernel has one JSON form (and one database key).
Schedule canonical(Schedule schedule);

// The P.V register tile in effect: pv_rows / pv_vectors, or the q.k tile's where 0.
int effective_pv_rows(const Schedule& schedule);
int effective_pv_vectors(const Schedule& schedule);

// How many keys ahead of the rows being read K and V are prefetched (0: none;
// a paged cache's K rows go by bytes instead, see attention_pipeline.cpp).
int prefetch_distance(const Schedule& schedule);

// Whether the schedule is for a GPU (it sets the thread knobs).
bool is_gpu_schedule(const Schedule& schedule);

std::string to_string(Form form);
std::string to_string(ParallelLoop loop);
std::string to_string(StoreLevel level);
std::string to_string(DotAxis axis);

}  // namespace attnforge::schedules
