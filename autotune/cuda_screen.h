// Screens CUDA candidates without a GPU: ptxas assembles each kernel, and a
// candidate that spills or whose estimated occupancy is below a floor is
// discarded before anything is timed.
#pragma once

#include <Halide.h>

#include <optional>
#include <string>

#include "spec/attention_spec.h"

namespace attnforge::autotune {

// Below this share of an SM's warps, latency goes unhidden: too slow to time.
constexpr double kMinCudaOccupancy = 0.125;

// Why `schedule` (JSON) should not be timed on `target`, or nothing when it
// should (including when ptxas is missing, or the schedule misfits or does
// not compile: the build reports those).
std::optional<std::string> cuda_screen(const AttentionSpec& spec, const std::string& schedule,
                                       const Halide::Target& target);

}  // namespace attnforge::autotune
