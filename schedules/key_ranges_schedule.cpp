#include "key_ranges_schedule.h"

#include "schedule.h"

namespace attnforge::schedules {

void schedule_key_ranges(ModifierKeyRanges& f, const AttentionVars& v, Halide::Func output,
                         const Halide::Target& target) {
  if (target.has_gpu_feature()) {
    throw ScheduleError("target", "the key-range table of a mask rule runs on the CPU; " +
                                      target.to_string() + " is a GPU target");
  }
  // Each level in parallel over chunks of rows; a row's keys a vector of
  // lanes at a time, both its values from one pass.
  constexpr int kRowsPerTask = 64;
  Halide::Var rows("rows"), row("row");
  for (Halide::Func level : f.levels) {
    level.compute_at(output, v.b)
        .bound(f.n, 0, kKeyRangeValues)
        .reorder(f.n, v.i, v.h)
        .unroll(f.n)
        .split(v.i, rows, row, kRowsPerTask, Halide::TailStrategy::GuardWithIf)
        .parallel(rows);
  }
  f.lanes.compute_at(f.levels[0], row).vectorize(f.lane);
  f.lanes.update().vectorize(f.lane);
  output.bound(f.n, 0, kKeyRangeValues)
      .bound(f.level, 0, kKeyRangeLevels)
      .reorder(f.n, v.i, f.level, v.h, v.b)
      .unroll(f.n);
}

}  // namespace attnforge::schedules
