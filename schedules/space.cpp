#include "space.h"

#include <algorithm>
#include <set>

#include "layer_schedule.h"
#include "presets.h"

namespace attnforge::schedules {

namespace {

// The values the table has the target kind search for the knobs of `scopes`.
std::vector<Knob> searched_knobs(TargetKind kind, std::initializer_list<KnobScope> scopes) {
  std::vector<Knob> knobs;
  for (const KnobRow& row : knob_table()) {
    const bool in_scope = std::find(scopes.begin(), scopes.end(), row.scope()) != scopes.end();
    if (in_scope && !row.on(kind).searched.empty()) knobs.push_back({&row, row.on(kind).searched});
  }
  return knobs;
}

using Identity = std::vector<int>;

// A cheap identity for deduplicating millions of partial schedules (JSON is
// slow): every knob's code, then the raw codes of the enum knobs of `raw`
// (if given), which canonical() may still change.
Identity identity(const Schedule& s, const Schedule* raw = nullptr) {
  Identity key;
  key.reserve(2 * knob_table().size());
  for (const KnobRow& row : knob_table()) key.push_back(row.get(s));
  if (raw) {
    for (const KnobRow& row : knob_table()) {
      if (row.encoding() != KnobEncoding::integer) key.push_back(row.get(*raw));
    }
  }
  return key;
}

}  // namespace

Schedule with_knob(Schedule s, const std::string& name, int value) {
  knob(name).set(s, value);
  return s;
}

std::vector<std::string> presets_for(const Halide::Target& target) {
  std::vector<std::string> names;
  for (const std::string& name : preset_names()) {
    if (is_gpu_schedule(load_preset(name)) == target.has_gpu_feature()) names.push_back(name);
  }
  return names;
}

ScheduleSpace::ScheduleSpace(const AttentionSpec& spec, const Halide::Target& target)
    : spec_(spec), target_(target) {
  spec.validate();
  const TargetKind kind = kind_of(target);
  knobs_ = searched_knobs(
      kind, {KnobScope::attention, kind == TargetKind::gpu ? KnobScope::gpu : KnobScope::cpu});
  if (spec.return_weights) restrict_knob("form", {static_cast<int>(Form::materialized)});
  if (kind == TargetKind::cpu) {
    // The widths the target has, at least 8 where it has them.
    std::vector<int> widths;
    for (int width : knob("vector_width").values) {
      if (width <= native_vector_width(target)) widths.push_back(width);
    }
    if (widths.empty()) widths = {native_vector_width(target)};
    restrict_knob("vector_width", widths);
    // One head per KV group: grouping rows changes nothing.
    if (spec.group_size() == 1) restrict_knob("group_heads", {0});
    if (spec.dtype != DType::bf16 || spec.quantized_kv() || !has_bf16_dots(target)) {
      restrict_knob("bf16_dots", {0});
    }
    if (spec.kv_storage != KvStorage::int8) restrict_knob("int16_dots", {0});
  }
}

ScheduleSpace::ScheduleSpace(const LayerSpec& layer, const Halide::Target& target)
    : ScheduleSpace(layer.attention, target) {
  layer.validate();
  layer_ = layer;
  for (Knob& knob : searched_knobs(kind_of(target), {KnobScope::layer})) knobs_.push_back(knob);
}

const Knob& ScheduleSpace::knob(const std::string& name) const {
  for (const Knob& knob : knobs_) {
    if (knob.name() == name) return knob;
  }
  throw ScheduleError(name, "is not a knob of the space");
}

void ScheduleSpace::restrict_knob(const std::string& name, std::vector<int> values) {
  if (values.empty()) throw ScheduleError(name, "needs at least one value");
  for (Knob& knob : knobs_) {
    if (knob.name() == name) {
      knob.values = std::move(values);
      return;
    }
  }
  throw ScheduleError(name, "is not a knob of the space");
}

bool ScheduleSpace::contains(const Schedule& s) const {
  return layer_ ? !check_layer(s, *layer_, target_) : !check(s, spec_, target_);
}

std::vector<Schedule> ScheduleSpace::enumerate() const {
  // A GPU space's partial schedules are GPU schedules from the start (their
  // thread knobs are set in turn below), so that canonical() collapses the
  // knobs a form ignores on the GPU, not on a CPU.
  Schedule start;
  if (target_.has_gpu_feature()) start.gpu_threads_x = start.gpu_threads_y = 1;
  std::vector<Schedule> partial = {start};
  for (const Knob& knob : knobs_) {
    std::vector<Schedule> next;
    std::set<Identity> distinct;
    for (const Schedule& s : partial) {
      for (int value : knob.values) {
        Schedule c = with_knob(s, knob.name(), value);
        // Integer knobs a form ignores collapse here (same canonical form,
        // same outcome of the knobs still to set), so the product stays
        // small. The enums stay apart: a rule between knobs may still
        // depend on them (key splits in parallel need kv_splits > 1).
        if (distinct.insert(identity(canonical(c), &c)).second) next.push_back(c);
      }
    }
    partial = std::move(next);
  }
  std::vector<Schedule> all;
  std::set<Identity> seen;
  for (const Schedule& s : partial) {
    Schedule c = canonical(s);
    if (contains(c) && seen.insert(identity(c)).second) all.push_back(c);
  }
  return all;
}

Schedule ScheduleSpace::sample(std::mt19937& rng) const {
  for (int attempt = 0; attempt < 10000; ++attempt) {
    Schedule s;
    for (const Knob& knob : knobs_) {
      size_t pick = std::uniform_int_distribution<size_t>(0, knob.values.size() - 1)(rng);
      s = with_knob(s, knob.name(), knob.values[pick]);
    }
    if (contains(s)) return canonical(s);
  }
  throw ScheduleError("space", "no legal schedule found for " + spec_.to_string());
}

}  // namespace attnforge::schedules
