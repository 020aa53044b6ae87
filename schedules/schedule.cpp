#include "schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace attnforge::schedules {

namespace {

template <typename Enum>
struct EnumNames {
  Enum value;
  const char* name;
};

constexpr EnumNames<Form> kForms[] = {
    {Form::materialized, "materialized"}, {Form::fused, "fused"}, {Form::online, "online"}};
constexpr EnumNames<ParallelLoop> kLoops[] = {{ParallelLoop::batch, "batch"},
                                              {ParallelLoop::heads, "heads"},
                                              {ParallelLoop::query_tiles, "query_tiles"},
                                              {ParallelLoop::kv_splits, "kv_splits"}};
constexpr EnumNames<StoreLevel> kLevels[] = {{StoreLevel::tile, "tile"},
                                             {StoreLevel::root, "root"}};

template <typename Enum, size_t N>
std::string name_of(const EnumNames<Enum> (&names)[N], Enum value) {
  for (const auto& entry : names) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

template <typename Enum, size_t N>
Enum value_of(const EnumNames<Enum> (&names)[N], const nlohmann::json& json, const char* field) {
  if (!json.is_string()) throw ScheduleError(field, fmt::format("{} is not a string", json.dump()));
  std::string text = json.get<std::string>();
  std::string expected;
  for (const auto& entry : names) {
    if (text == entry.name) return entry.value;
    expected += expected.empty() ? entry.name : std::string(", ") + entry.name;
  }
  throw ScheduleError(field, fmt::format("'{}' is unknown; expected one of {}", text, expected));
}

int int_of(const nlohmann::json& json, const char* field) {
  if (!json.is_number_integer()) {
    throw ScheduleError(field, fmt::format("{} is not an integer", json.dump()));
  }
  auto value = json.get<int64_t>();
  if (value < 0 || value > 1 << 20) {
    throw ScheduleError(field, fmt::format("{} is out of range", value));
  }
  return static_cast<int>(value);
}

}  // namespace

std::string to_string(Form form) {
  return name_of(kForms, form);
}
std::string to_string(ParallelLoop loop) {
  return name_of(kLoops, loop);
}
std::string to_string(StoreLevel level) {
  return name_of(kLevels, level);
}

const std::vector<IntKnob>& int_knobs() {
  static const std::vector<IntKnob> knobs = {
      {"query_tile", &Schedule::query_tile},
      {"key_block", &Schedule::key_block},
      {"vector_width", &Schedule::vector_width},
      {"unroll", &Schedule::unroll},
      {"register_rows", &Schedule::register_rows},
      {"register_vectors", &Schedule::register_vectors},
      {"kv_splits", &Schedule::kv_splits},
      {"pv_rows", &Schedule::pv_rows, true},
      {"pv_vectors", &Schedule::pv_vectors, true},
      {"pv_chunk", &Schedule::pv_chunk, true},
      {"projection_vectors", &Schedule::projection_vectors, true, true},
      {"projection_rows", &Schedule::projection_rows, true, true},
      {"projection_block", &Schedule::projection_block, true, true},
      {"projection_fuse_q", &Schedule::projection_fuse_q, true, true},
      {"gpu_threads_x", &Schedule::gpu_threads_x, true, false, true},
      {"gpu_threads_y", &Schedule::gpu_threads_y, true, false, true},
      {"gpu_stage_kv", &Schedule::gpu_stage_kv, true, false, true}};
  return knobs;
}

nlohmann::json Schedule::to_json() const {
  nlohmann::json loops = nlohmann::json::array();
  for (ParallelLoop loop : parallel) loops.push_back(to_string(loop));
  nlohmann::json json = {{"form", to_string(form)},
                         {"parallel", loops},
                         {"intermediates", to_string(intermediates)},
                         {"skip_masked_blocks", skip_masked_blocks}};
  for (const IntKnob& knob : int_knobs()) {
    if (!knob.omitted_when_zero || this->*knob.member != 0) json[knob.name] = this->*knob.member;
  }
  return json;
}

Schedule Schedule::from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw ScheduleError("schedule", "expected a JSON object");
  Schedule s;
  for (const auto& [key, value] : json.items()) {
    auto knob = std::find_if(int_knobs().begin(), int_knobs().end(),
                             [&key = key](const IntKnob& k) { return key == k.name; });
    if (knob != int_knobs().end()) {
      s.*knob->member = int_of(value, knob->name);
    } else if (key == "form") {
      s.form = value_of(kForms, value, "form");
    } else if (key == "intermediates") {
      s.intermediates = value_of(kLevels, value, "intermediates");
    } else if (key == "skip_masked_blocks") {
      if (!value.is_boolean()) throw ScheduleError(key, value.dump() + " is not a boolean");
      s.skip_masked_blocks = value.get<bool>();
    } else if (key == "parallel") {
      if (!value.is_array()) throw ScheduleError(key, value.dump() + " is not an array");
      s.parallel.clear();
      std::set<ParallelLoop> seen;
      for (const auto& loop : value) {
        ParallelLoop parsed = value_of(kLoops, loop, "parallel");
        if (!seen.insert(parsed).second) {
          throw ScheduleError("parallel", "'" + to_string(parsed) + "' is listed twice");
        }
        s.parallel.push_back(parsed);
      }
    } else {
      throw ScheduleError(key, "is not a schedule field");
    }
  }
  return s;
}

Schedule canonical(Schedule s) {
  const Schedule defaults;
  auto drop = [&](ParallelLoop loop) {
    s.parallel.erase(std::remove(s.parallel.begin(), s.parallel.end(), loop), s.parallel.end());
  };
  if (is_gpu_schedule(s)) {
    // Threads, not vectors and CPU register tiles, split a GPU block's work.
    for (const IntKnob& knob : int_knobs()) {
      const std::string name = knob.name;
      if (!knob.gpu && !knob.projection && name != "query_tile" && name != "key_block" &&
          name != "kv_splits") {
        s.*knob.member = defaults.*knob.member;
      }
    }
    s.intermediates = defaults.intermediates;
    s.parallel = defaults.parallel;
    if (s.kv_splits > 1) s.parallel.push_back(ParallelLoop::kv_splits);
  }
  if (s.form == Form::materialized) {
    for (const IntKnob& knob : int_knobs()) {
      const std::string name = knob.name;
      // On a GPU the tile knobs shape the blocks of every stage.
      const bool gpu_tile =
          is_gpu_schedule(s) && (knob.gpu || name == "query_tile" || name == "key_block");
      if (name != "vector_width" && !knob.projection && !gpu_tile) {
        s.*knob.member = defaults.*knob.member;
      }
    }
    s.intermediates = defaults.intermediates;
    s.skip_masked_blocks = defaults.skip_masked_blocks;
    s.projection_fuse_q = defaults.projection_fuse_q;  // no query tiles to fuse into
    drop(ParallelLoop::query_tiles);
  }
  if (s.form == Form::fused) s.key_block = defaults.key_block;
  if (s.form == Form::online && s.pv_chunk == s.key_block) s.pv_chunk = 0;  // one chunk
  if (s.pv_rows == s.register_rows) s.pv_rows = 0;
  if (s.pv_vectors == s.register_vectors) s.pv_vectors = 0;
  if (s.kv_splits == 1) drop(ParallelLoop::kv_splits);
  return s;
}

bool is_gpu_schedule(const Schedule& s) {
  return s.gpu_threads_x != 0 || s.gpu_threads_y != 0;
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
