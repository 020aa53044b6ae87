// Halide 21 splits a prefetch into one call per cache line, but steps the
// element offset by the line's size in bytes: for 4-byte elements it touches
// every fourth line over four times the region. This lowering pass rescales
// each split step to elements.
#pragma once

#include <Halide.h>

namespace attnforge::schedules {

// Adds the pass to `pipeline`, which must contain prefetches to be fixed;
// lowering runs it after Halide's own passes.
void fix_prefetch_line_steps(Halide::Pipeline pipeline);

}  // namespace attnforge::schedules
