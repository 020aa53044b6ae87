// A tuning run of a spec's backward kernel (schedules/backward_schedule.h):
// 1. reference: the naive forward writes out and lse, the naive backward the
//    gradients every candidate is checked against (timed and recorded once
//    per database);
//    Halide's x86 autoschedulers on the backward algorithm are competitors,
//    each measured once per database (records "autoscheduler:<name>");
// 2. search: the backward presets that fit, then every combination of the
//    knobs' searched values that fits, in an order the seed shuffles, each
//    compiled, checked and timed in a contained child, until the budget or
//    max_candidates is spent;
// 3. confirm: the finalists (the `finalists` fastest and the fastest preset
//    with the presets near it) measured again in confirm_rounds rounds, each
//    round in a rotated order, recorded as confirmations that the database's
//    winners then prefer (confirmation.h, as the forward tuner's).
// Records carry backward = true: a group of their own, never compared with
// the forward's. A rerun with the same database continues: candidates
// already recorded count as proposed and are not measured again.
#pragma once

#include <functional>
#include <vector>

#include "database.h"
#include "schedules/backward_schedule.h"
#include "tuner.h"

namespace attnforge::autotune {

// The candidates in the order a run proposes them.
std::vector<schedules::BackwardSchedule> backward_candidates(const AttentionSpec& spec,
                                                             const Halide::Target& target,
                                                             uint32_t seed);

// Reads options' spec, target, shape, budget_seconds, seed, threads, runner,
// min_measure_seconds, max_candidates, autoschedulers, confirm_rounds and
// finalists. Throws SpecError for a spec
// with no backward kernel, std::runtime_error when the reference fails.
TuneSummary tune_backward(const TuneOptions& options, Database& database,
                          const std::function<void(const Progress&)>& on_progress = {});

}  // namespace attnforge::autotune
