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
// online_mma (CUDA, f16 and bf16): online on tensor cores, a warp per
// query_tile rows (16 or 32), its lanes holding mma fragments
// (algorithm/mma_online_form.h); emulated on a CPU target, for tests.
enum class Form { materialized, fused, online, online_rows, online_mma };

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

// A schedule: one value per knob. What each knob does, its legal and searched
// values and the forms that read it are in the knob table (knob_table.cpp),
// printed by `attnforge knobs` into docs/schedules.md.
struct Schedule {
  Form form = Form::online;
  int query_tile = 32;
  int key_block = 64;
  int vector_width = 8;
  int unroll = 1;
  int register_rows = 4;
  int register_vectors = 2;
  int pv_rows = 0;  // 0: the q.k register tile's
  int pv_vectors = 0;
  int pv_chunk = 0;  // 0: one pass
  std::vector<ParallelLoop> parallel = {ParallelLoop::batch, ParallelLoop::heads,
                                        ParallelLoop::query_tiles};
  int kv_splits = 1;
  StoreLevel q_copy_at = StoreLevel::tile;
  bool skip_masked_blocks = true;
  bool group_heads = false;
  DotAxis dot_axis = DotAxis::queries;
  int prefetch_blocks = 0;  // 0: none
  bool bf16_dots = false;
  bool int16_dots = false;

  // A layer's projection GEMMs (0 outside a layer schedule).
  int projection_vectors = 0;
  int projection_rows = 0;
  int projection_block = 0;
  bool projection_fuse_q = false;

  // CUDA (0 in CPU schedules).
  int gpu_threads_x = 0;
  int gpu_threads_y = 0;
  bool gpu_stage_kv = false;

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
