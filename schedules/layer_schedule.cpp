#include "layer_schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "space.h"

namespace attnforge::schedules {

namespace {

int accumulator_budget(const Halide::Target& target) {
  return native_vector_width(target) == 16 ? 28 : 14;
}

}  // namespace

Schedule attention_part(Schedule s) {
  for (const KnobRow& row : knob_table()) {
    if (row.scope() == KnobScope::layer) row.set(s, row.unset());
  }
  return s;
}

Schedule with_projection_defaults(Schedule s, const Halide::Target& target) {
  const bool wide = native_vector_width(target) == 16;
  if (s.projection_vectors == 0) s.projection_vectors = 2;
  if (s.projection_rows == 0) s.projection_rows = wide ? 12 : 6;
  if (s.projection_block == 0) s.projection_block = s.projection_rows * 4;
  return s;
}

std::optional<ScheduleError> check_layer(const Schedule& s, const LayerSpec& spec,
                                         const Halide::Target& target) {
  if (kind_of(target) == TargetKind::gpu) {
    return ScheduleError(
        "target", "the layer is built for CPUs; '" + target.to_string() + "' has a GPU feature");
  }
  if (auto misfit = check(attention_part(s), spec.attention, target)) return misfit;
  if (auto misfit = check_legal_values(s, kind_of(target), {KnobScope::layer})) return misfit;
  const int accumulators = s.projection_vectors * s.projection_rows;
  if (accumulators > accumulator_budget(target)) {
    return ScheduleError("projection_rows",
                         fmt::format("a {}x{} projection tile needs {} accumulators; the target "
                                     "keeps {}",
                                     s.projection_vectors, s.projection_rows, accumulators,
                                     accumulator_budget(target)));
  }
  if (s.projection_block < s.projection_rows || s.projection_block % s.projection_rows != 0) {
    return ScheduleError("projection_block",
                         fmt::format("{} must be a multiple of projection_rows ({})",
                                     s.projection_block, s.projection_rows));
  }
  if (s.projection_fuse_q && s.q_copy_at == StoreLevel::root) {
    return ScheduleError("projection_fuse_q",
                         "Q cannot be projected per query tile when the query tiles' copy is at "
                         "root (q_copy_at: root)");
  }
  if (s.projection_fuse_q && s.form == Form::materialized) {
    return ScheduleError("projection_fuse_q",
                         "the materialized form has no query tiles to fuse into");
  }
  return std::nullopt;
}

void validate_layer(const Schedule& s, const LayerSpec& spec, const Halide::Target& target) {
  spec.validate();
  if (auto misfit = check_layer(s, spec, target)) throw *misfit;
}

int projection_lanes(const Schedule& s, int extent) {
  int lanes = s.vector_width;
  while (lanes > 1 && extent % lanes != 0) lanes /= 2;
  return lanes;
}

int projection_tile_vectors(const Schedule& s, int extent) {
  const int lanes = projection_lanes(s, extent);
  int vectors = std::max(1, std::min(s.projection_vectors, extent / lanes));
  while (vectors > 1 && extent % (vectors * lanes) != 0) --vectors;
  return vectors;
}

}  // namespace attnforge::schedules
