// Whether a schedule fits a spec and target, decided before anything
// compiles: first the knob table's rules (scopes and legal values), then the
// rules between knobs, those every target shares written once.
#pragma once

#include <Halide.h>

#include <optional>

#include "knob_table.h"
#include "schedule.h"
#include "spec/attention_spec.h"

namespace attnforge::schedules {

// The kind of processor a target is: GPU where it has a GPU API.
TargetKind kind_of(const Halide::Target& target);

// The first knob that does not fit the spec or target, if any.
std::optional<ScheduleError> check(const Schedule& schedule, const AttentionSpec& spec,
                                   const Halide::Target& target);

// Throws ScheduleError naming the knob that does not fit the spec or target.
void validate(const Schedule& schedule, const AttentionSpec& spec, const Halide::Target& target);

// What no schedule can run on the target, whatever its knobs (bf16 on CUDA).
std::optional<ScheduleError> check_spec_on_target(const AttentionSpec& spec,
                                                  const Halide::Target& target);

// The knobs of `scope` that `schedule` sets although the target or schedule
// kind has none of them (scope layer: an attention schedule's projections).
std::optional<ScheduleError> check_unset(const Schedule& schedule, KnobScope scope);

// The legal values, from the knob table, of every knob of these scopes the
// schedule's form reads on this kind of target.
std::optional<ScheduleError> check_legal_values(const Schedule& schedule, TargetKind kind,
                                                std::initializer_list<KnobScope> scopes);

// Widest f32 vector the target has: 16 with AVX-512, 8 with AVX, else 4.
int native_vector_width(const Halide::Target& target);

// Whether Halide emits bf16 dot products (vdpbf16ps) for the target.
bool has_bf16_dots(const Halide::Target& target);
// Whether `target` rounds f32 to bf16 with vcvtne2ps2bf16 through Halide's
// AVX-512 runtime (linked for targets naming avx512).
bool has_native_bf16_rounding(const Halide::Target& target);

}  // namespace attnforge::schedules
