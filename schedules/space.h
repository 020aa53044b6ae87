// The x86 schedule space: which value of each knob is legal for a spec and
// target, a check that rejects a schedule that does not fit before anything
// compiles, and enumeration and sampling of the legal schedules.
#pragma once

#include <Halide.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "generators/attention_spec.h"
#include "generators/layer_spec.h"
#include "schedule.h"

namespace attnforge::schedules {

// The first knob that does not fit the spec or target, if any.
std::optional<ScheduleError> check(const Schedule& schedule, const AttentionSpec& spec,
                                   const Halide::Target& target);

// Throws ScheduleError naming the knob that does not fit the spec or target.
void validate(const Schedule& schedule, const AttentionSpec& spec, const Halide::Target& target);

struct Knob {
  std::string name;
  std::vector<int> values;
};

class ScheduleSpace {
 public:
  ScheduleSpace(const AttentionSpec& spec, const Halide::Target& target);
  // A layer's space: its attention's knobs and the projection knobs.
  ScheduleSpace(const LayerSpec& layer, const Halide::Target& target);

  const std::vector<Form>& forms() const { return forms_; }
  // Candidate values per integer knob (before cross-knob constraints).
  const std::vector<Knob>& knobs() const { return knobs_; }
  // Narrows one integer knob to `values` (e.g. to search a smaller space);
  // throws ScheduleError for an unknown knob or no values.
  void restrict_knob(const std::string& name, std::vector<int> values);

  const std::vector<std::vector<ParallelLoop>>& parallel_choices() const {
    return parallel_choices_;
  }
  // Where the Q copy lives. Masked-block skipping is not searched: it is never slower.
  const std::vector<StoreLevel>& store_levels() const { return store_levels_; }

  // Whether the schedule fits this spec and target.
  bool contains(const Schedule& schedule) const;

  // Every legal schedule, canonical, each once.
  std::vector<Schedule> enumerate() const;
  // A legal schedule drawn uniformly over knob combinations, canonical.
  Schedule sample(std::mt19937& rng) const;

 private:
  AttentionSpec spec_;
  std::optional<LayerSpec> layer_;
  Halide::Target target_;
  std::vector<Form> forms_;
  std::vector<Knob> knobs_;
  std::vector<std::vector<ParallelLoop>> parallel_choices_;
  std::vector<StoreLevel> store_levels_ = {StoreLevel::tile, StoreLevel::root};
};

// `schedule` with integer knob `name` set to `value`; throws ScheduleError for an unknown name.
Schedule with_knob(Schedule schedule, const std::string& name, int value);

// The presets written for the target's kind of processor (CUDA or CPU).
std::vector<std::string> presets_for(const Halide::Target& target);

// Widest f32 vector the target has: 16 with AVX-512, 8 with AVX, else 4.
int native_vector_width(const Halide::Target& target);

}  // namespace attnforge::schedules
