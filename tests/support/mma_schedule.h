// A schedule of the tensor-core form (online_mma) as JSON, for tests.
#pragma once

#include <string>

#include "schedules/presets.h"
#include "schedules/schedule.h"

namespace attnforge::testing {

// `query_tile` rows per warp, key blocks of `key_block`, `warps` per block.
inline std::string mma_schedule(int query_tile, int key_block, int warps) {
  schedules::Schedule s = schedules::load_preset("online_mma_cuda");
  s.query_tile = query_tile;
  s.key_block = key_block;
  s.gpu_threads_y = warps;
  return s.to_json().dump();
}

}  // namespace attnforge::testing
