#include "schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "knob_table.h"

namespace attnforge::schedules {

namespace {

template <typename Enum>
std::string name_of(const char* knob_name, Enum value) {
  return knob(knob_name).describe(static_cast<int>(value));
}

}  // namespace

std::string to_string(Form form) {
  return name_of("form", form);
}
std::string to_string(ParallelLoop loop) {
  return knob("parallel").names().at(static_cast<int>(loop));
}
std::string to_string(StoreLevel level) {
  return name_of("q_copy_at", level);
}
std::string to_string(DotAxis axis) {
  return name_of("dot_axis", axis);
}

nlohmann::json Schedule::to_json() const {
  nlohmann::json json = nlohmann::json::object();
  for (const KnobRow& row : knob_table()) {
    const int value = row.get(*this);
    if (!row.omits_unset() || value != row.unset()) json[row.name()] = row.to_json(value);
  }
  return json;
}

Schedule Schedule::from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw ScheduleError("schedule", "expected a JSON object");
  Schedule s;
  const nlohmann::json current = with_current_knob_names(json);
  for (const auto& [key, value] : current.items()) {
    const KnobRow& row = knob(key);
    row.set(s, row.from_json(value));
  }
  return s;
}

Schedule canonical(Schedule s) {
  const TargetKind kind = is_gpu_schedule(s) ? TargetKind::gpu : TargetKind::cpu;
  for (const KnobRow& row : knob_table()) {
    if (row.ignored(kind, s.form)) row.set(s, row.unset());
  }
  auto drop = [&](ParallelLoop loop) {
    s.parallel.erase(std::remove(s.parallel.begin(), s.parallel.end(), loop), s.parallel.end());
  };
  // The materialized form has no query tiles; a GPU runs its key splits side by side.
  if (s.form == Form::materialized) drop(ParallelLoop::query_tiles);
  if (kind == TargetKind::gpu && s.kv_splits > 1) s.parallel.push_back(ParallelLoop::kv_splits);
  if (s.kv_splits == 1) drop(ParallelLoop::kv_splits);
  // Values that say the same as the unset one.
  if (s.form == Form::online && s.pv_chunk == s.key_block) s.pv_chunk = 0;  // one chunk
  if (s.pv_rows == s.register_rows) s.pv_rows = 0;
  if (s.pv_vectors == s.register_vectors) s.pv_vectors = 0;
  return s;
}

bool is_gpu_schedule(const Schedule& s) {
  return s.gpu_threads_x != 0 || s.gpu_threads_y != 0;
}

int prefetch_distance(const Schedule& s) {
  return s.prefetch_blocks * s.key_block;
}

int effective_pv_rows(const Schedule& s) {
  return s.pv_rows == 0 ? s.register_rows : s.pv_rows;
}
int effective_pv_vectors(const Schedule& s) {
  return s.pv_vectors == 0 ? s.register_vectors : s.pv_vectors;
}

bool Schedule::operator==(const Schedule& o) const {
  return to_json() == o.to_json();
}

}  // namespace attnforge::schedules
