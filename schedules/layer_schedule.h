// A layer's schedule is the attention's Schedule plus its projection knobs:
// their check against a layer spec and target, and their defaults.
#pragma once

#include <Halide.h>

#include <optional>

#include "schedule.h"
#include "spec/layer_spec.h"

namespace attnforge::schedules {

// The schedule without its projection knobs: what the attention inside applies.
Schedule attention_part(Schedule schedule);

// The same schedule with unset projection knobs at values that suit the target.
Schedule with_projection_defaults(Schedule schedule, const Halide::Target& target);

// The first knob that does not fit the layer or target, if any.
std::optional<ScheduleError> check_layer(const Schedule& schedule, const LayerSpec& spec,
                                         const Halide::Target& target);

// Throws ScheduleError naming the knob that does not fit.
void validate_layer(const Schedule& schedule, const LayerSpec& spec, const Halide::Target& target);

// f32 lanes of a GEMM over `extent` output features: the most, up to the
// schedule's vector width, that divide it, so no vector runs past a head.
int projection_lanes(const Schedule& schedule, int extent);
// Vectors per register tile: the most, up to the schedule's, that divide `extent` evenly.
int projection_tile_vectors(const Schedule& schedule, int extent);

}  // namespace attnforge::schedules
