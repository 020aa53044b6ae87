// The schedule space of a spec on a target, CPU or GPU: the values the
// search tries for each knob (from the knob table, narrowed to the spec and
// target), and enumeration and sampling of the schedules that fit.
#pragma once

#include <Halide.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "knob_table.h"
#include "schedule.h"
#include "schedule_check.h"
#include "spec/attention_spec.h"
#include "spec/layer_spec.h"

namespace attnforge::schedules {

// A knob the space searches and the values (codes, see KnobRow) it tries.
struct Knob {
  const KnobRow* row;
  std::vector<int> values;

  const std::string& name() const { return row->name(); }
};

class ScheduleSpace {
 public:
  ScheduleSpace(const AttentionSpec& spec, const Halide::Target& target);
  // A layer's space: its attention's knobs and the projection knobs.
  ScheduleSpace(const LayerSpec& layer, const Halide::Target& target);

  // Every knob searched, in the knob table's order; the others stay at
  // their defaults (masked-block skipping is never slower, so never searched).
  const std::vector<Knob>& knobs() const { return knobs_; }
  // The searched knob named `name`; throws ScheduleError if the space has none.
  const Knob& knob(const std::string& name) const;
  // Narrows one knob to `values` (codes, e.g. to search a smaller space);
  // throws ScheduleError for a knob the space does not search or no values.
  void restrict_knob(const std::string& name, std::vector<int> values);

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
  std::vector<Knob> knobs_;
};

// `schedule` with knob `name` set to the value with code `value`; throws
// ScheduleError for an unknown name.
Schedule with_knob(Schedule schedule, const std::string& name, int value);

// The presets written for the target's kind of processor (CUDA or CPU).
std::vector<std::string> presets_for(const Halide::Target& target);

}  // namespace attnforge::schedules
