// A decoding schedule cut to tiles of one query's rows. The decoding presets
// tile a few query rows (a KV group's heads where they group them) so that 2
// to 16 rows share each K/V row; a call with one row per head then computes
// the rest of each tile for nothing (3 of 4 rows for MHA). emit ships the cut
// schedule as the one-row kernel, and bench times it beside its preset.
#pragma once

#include <Halide.h>

#include <optional>

#include "schedule.h"
#include "spec/attention_spec.h"

namespace attnforge::schedules {

// `schedule` (a CPU schedule along the head dim) with tiles of one query's
// rows and register tiles that divide them; nothing where its tiles are that
// narrow already, or where the cut schedule does not fit `spec` on `target`.
std::optional<Schedule> one_query_tiles(Schedule schedule, const AttentionSpec& spec,
                                        const Halide::Target& target);

}  // namespace attnforge::schedules
