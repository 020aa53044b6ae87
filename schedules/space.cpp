#include "space.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnforge::schedules {

namespace {

void require(bool ok, const char* field, const std::string& message) {
  if (!ok) throw ScheduleError(field, message);
}

bool power_of_two(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Vector registers the accumulators of a register tile may take (of 16 or 32).
int accumulator_budget(const Halide::Target& target) {
  return target.has_feature(Halide::Target::AVX512) ? 28 : 14;
}

Schedule with_knob(Schedule s, const std::string& name, int value) {
  if (name == "query_tile") s.query_tile = value;
  if (name == "key_block") s.key_block = value;
  if (name == "vector_width") s.vector_width = value;
  if (name == "unroll") s.unroll = value;
  if (name == "register_rows") s.register_rows = value;
  if (name == "register_vectors") s.register_vectors = value;
  if (name == "kv_splits") s.kv_splits = value;
  return s;
}

}  // namespace

int native_vector_width(const Halide::Target& target) {
  if (target.has_feature(Halide::Target::AVX512)) return 16;
  if (target.has_feature(Halide::Target::AVX)) return 8;
  return 4;
}

void validate(const Schedule& s, const AttentionSpec& spec, const Halide::Target& target) {
  spec.validate();
  require(target.arch == Halide::Target::X86, "target",
          fmt::format("'{}' is not an x86 target; CPU schedules need x86", target.to_string()));
  require(s.vector_width == 4 || s.vector_width == 8 || s.vector_width == 16, "vector_width",
          fmt::format("{}; expected 4, 8 or 16", s.vector_width));
  require(s.vector_width <= native_vector_width(target), "vector_width",
          fmt::format("{} lanes need {}; target '{}' has {} f32 lanes", s.vector_width,
                      s.vector_width == 16 ? "AVX-512" : "AVX", target.to_string(),
                      native_vector_width(target)));
  bool parallel_splits =
      std::find(s.parallel.begin(), s.parallel.end(), ParallelLoop::kv_splits) != s.parallel.end();
  require(s.kv_splits >= 1 && s.kv_splits <= 8 && power_of_two(s.kv_splits), "kv_splits",
          fmt::format("{}; expected 1, 2, 4 or 8", s.kv_splits));
  require(s.kv_splits == 1 || s.form == Form::online, "kv_splits",
          fmt::format("{} splits need the online form, not {}", s.kv_splits, to_string(s.form)));
  require(s.kv_splits > 1 || !parallel_splits, "parallel",
          "'kv_splits' can run in parallel only with kv_splits > 1");
  if (s.form == Form::materialized) return;

  require(!spec.return_weights, "form",
          fmt::format("{} cannot return attention weights; use materialized", to_string(s.form)));
  require(s.register_vectors >= 1 && s.register_vectors <= 4, "register_vectors",
          fmt::format("{}; expected 1..4", s.register_vectors));
  require(s.register_rows >= 1 && s.register_rows <= 8, "register_rows",
          fmt::format("{}; expected 1..8", s.register_rows));
  require(s.register_vectors * s.register_rows <= accumulator_budget(target), "register_rows",
          fmt::format("a {}x{} register tile needs {} accumulators; the target keeps {}",
                      s.register_vectors, s.register_rows, s.register_vectors * s.register_rows,
                      accumulator_budget(target)));
  require(spec.head_dim % s.vector_width == 0, "vector_width",
          fmt::format("head_dim {} is not a multiple of {} lanes", spec.head_dim, s.vector_width));
  int tile_rows = s.vector_width * s.register_vectors;
  require(s.query_tile >= tile_rows && s.query_tile <= 256 && s.query_tile % tile_rows == 0,
          "query_tile",
          fmt::format("{} must be a multiple of vector_width x register_vectors ({}) up to 256",
                      s.query_tile, tile_rows));
  require(s.query_tile % s.register_rows == 0, "query_tile",
          fmt::format("{} is not a multiple of register_rows ({})", s.query_tile, s.register_rows));
  require(s.key_block >= 8 && s.key_block <= 512 && s.key_block % s.register_rows == 0, "key_block",
          fmt::format("{} must be 8..512 and a multiple of register_rows ({})", s.key_block,
                      s.register_rows));
  require(s.unroll >= 1 && s.unroll <= 8 && power_of_two(s.unroll), "unroll",
          fmt::format("{}; expected 1, 2, 4 or 8", s.unroll));
}

ScheduleSpace::ScheduleSpace(const AttentionSpec& spec, const Halide::Target& target)
    : spec_(spec), target_(target) {
  forms_ = {Form::materialized};
  if (!spec.return_weights) forms_ = {Form::online, Form::fused, Form::materialized};
  std::vector<int> widths = {8};
  if (native_vector_width(target) == 16) widths.push_back(16);
  if (native_vector_width(target) == 4) widths = {4};
  knobs_ = {{"query_tile", {16, 32, 48, 64, 96, 128}},
            {"key_block", {16, 32, 64, 128, 256}},
            {"vector_width", widths},
            {"unroll", {1, 2, 4}},
            {"register_rows", {2, 3, 4, 6, 8}},
            {"register_vectors", {1, 2, 3}},
            {"kv_splits", {1, 2, 4}}};
  using P = ParallelLoop;
  parallel_choices_ = {{P::batch, P::heads, P::query_tiles},
                       {P::batch, P::heads},
                       {P::batch, P::heads, P::query_tiles, P::kv_splits}};
}

bool ScheduleSpace::legal(const Schedule& s) const {
  try {
    validate(s, spec_, target_);
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

std::vector<Schedule> ScheduleSpace::enumerate() const {
  std::vector<Schedule> all;
  for (Form form : forms_) {
    for (const auto& parallel : parallel_choices_) {
      Schedule base;
      base.form = form;
      base.parallel = parallel;
      std::vector<Schedule> partial = {base};
      for (const Knob& knob : knobs_) {
        bool used = form != Form::materialized || knob.name == "vector_width";
        std::vector<Schedule> next;
        for (const Schedule& s : partial) {
          if (!used) {
            next.push_back(s);
            continue;
          }
          for (int value : knob.values) next.push_back(with_knob(s, knob.name, value));
        }
        partial = std::move(next);
      }
      for (const Schedule& s : partial) {
        if (legal(s)) all.push_back(s);
      }
    }
  }
  return all;
}

Schedule ScheduleSpace::sample(std::mt19937& rng) const {
  for (int attempt = 0; attempt < 10000; ++attempt) {
    Schedule s;
    s.form = forms_[std::uniform_int_distribution<size_t>(0, forms_.size() - 1)(rng)];
    s.parallel = parallel_choices_[std::uniform_int_distribution<size_t>(
        0, parallel_choices_.size() - 1)(rng)];
    for (const Knob& knob : knobs_) {
      size_t pick = std::uniform_int_distribution<size_t>(0, knob.values.size() - 1)(rng);
      s = with_knob(s, knob.name, knob.values[pick]);
    }
    if (legal(s)) return s;
  }
  throw ScheduleError("space", "no legal schedule found for " + spec_.to_string());
}

}  // namespace attnforge::schedules
