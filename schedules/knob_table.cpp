#include "knob_table.h"

#include <fmt/format.h>

#include <set>

namespace attnforge::schedules {

namespace {

using Scope = KnobScope;
using Encoding = KnobEncoding;
using Feature = KnobFeature;

int code(Form form) {
  return static_cast<int>(form);
}

int code(std::initializer_list<ParallelLoop> loops) {
  std::vector<int> codes;
  for (ParallelLoop loop : loops) codes.push_back(static_cast<int>(loop));
  return KnobRow::code_of_list(codes);
}

KnobRange between(int min, int max) {
  return {min, max};
}
KnobRange powers_of_two(int min, int max) {
  return {min, max, true};
}

// The forms a knob of the tiled forms is ignored by.
std::vector<Form> materialized_only() {
  return {Form::materialized};
}

// The register tiles and loop order of the tiled forms, which the
// materialized form does not have.
KnobOnTarget tiled(std::vector<int> searched, KnobRange legal) {
  return KnobOnTarget{std::move(searched), legal, materialized_only()};
}

// The enums: which form, which loops run in parallel, where the Q copy is.
void add_enum_rows(std::vector<KnobRow>& rows) {
  using F = Form;
  using P = ParallelLoop;
  rows.push_back(
      KnobRow::of<&Schedule::form>("form", Scope::attention)
          .meaning("The algorithm form: `materialized` (scores stored, the unfused pipeline), "
                   "`fused` (two passes over keys per query tile), `online` (running max and sum "
                   "over key blocks) or, on CUDA, `online_rows` (one thread per query row) and "
                   "`online_mma` (f16 and bf16 on tensor cores, a warp per 16 or 32 query rows).")
          .encoded_as(Encoding::name,
                      {"materialized", "fused", "online", "online_rows", "online_mma"})
          .on_cpu({{code(F::online), code(F::fused), code(F::materialized)}})
          .on_gpu(
              {{code(F::online), code(F::materialized), code(F::online_rows), code(F::online_mma)}})
          .seen_by_model_as(Feature::one_hot));
  rows.push_back(
      KnobRow::of<&Schedule::parallel>("parallel", Scope::cpu)
          .meaning("The loops that run in parallel: batch, heads, query tiles, key splits.")
          .encoded_as(Encoding::name_list, {"batch", "heads", "query_tiles", "kv_splits"})
          .on_cpu({{code({P::batch, P::heads, P::query_tiles}), code({P::batch, P::heads}),
                    code({P::batch, P::heads, P::query_tiles, P::kv_splits})}})
          .seen_by_model_as(Feature::count));
  rows.push_back(KnobRow::of<&Schedule::q_copy_at>("q_copy_at", Scope::cpu)
                     .meaning("Where the scaled copy of Q is computed: per query `tile`, or once "
                              "at `root`. JSON reads the former key `intermediates` too.")
                     .encoded_as(Encoding::name, {"tile", "root"})
                     .on_cpu({{0, 1}, std::nullopt, materialized_only()})
                     .seen_by_model_as(Feature::flag)
                     .formerly("intermediates"));
  rows.push_back(
      KnobRow::of<&Schedule::dot_axis>("dot_axis", Scope::cpu)
          .meaning("How q·k is vectorized: across a tile's query rows (`queries`, for tiles of "
                   "many rows) or along the head dim (`head_dim`, for decoding tiles of a few "
                   "rows, `register_rows` rows x `register_vectors` keys at a time).")
          .encoded_as(Encoding::name, {"queries", "head_dim"})
          .on_cpu({{0, 1}, std::nullopt, materialized_only()})
          .omitted_when_unset()
          .seen_by_model_as(Feature::flag));
}

// Tiles, blocks, vectors and key splits of the attention.
void add_tile_rows(std::vector<KnobRow>& rows) {
  // Key blocks include multiples of 3 so that 3- and 6-row register tiles fit;
  // on a GPU, the smallest are for online_rows, whose thread holds a block's K rows.
  rows.push_back(KnobRow::of<&Schedule::query_tile>("query_tile", Scope::attention)
                     .meaning("Query rows per tile.")
                     .on_cpu(tiled({16, 32, 48, 64, 96, 128}, between(1, 256)))
                     .on_gpu({{8, 16, 32, 64}, between(1, 256)}));
  rows.push_back(KnobRow::of<&Schedule::key_block>("key_block", Scope::attention)
                     .meaning("Keys per block of the online form; the fused form takes all keys.")
                     .on_cpu({{16, 32, 48, 64, 96, 128, 192, 256},
                              between(8, 512),
                              {Form::materialized, Form::fused}})
                     .on_gpu({{1, 2, 4, 8, 16, 32, 64, 128, 256}, between(1, 512), {Form::fused}}));
  rows.push_back(KnobRow::of<&Schedule::vector_width>("vector_width", Scope::cpu)
                     .meaning("f32 lanes: 8 on AVX2, 8 or 16 on AVX-512. The tiled forms need a "
                              "head dim of whole vectors.")
                     .on_cpu({{8, 16}, powers_of_two(4, 16)}));
  rows.push_back(KnobRow::of<&Schedule::unroll>("unroll", Scope::cpu)
                     .meaning("Extra unrolling of the key loop.")
                     .on_cpu(tiled({1, 2, 4}, powers_of_two(1, 8))));
  rows.push_back(KnobRow::of<&Schedule::register_rows>("register_rows", Scope::cpu)
                     .meaning("Rows of the matrix products' register tile (vectors x rows).")
                     .on_cpu(tiled({2, 3, 4, 6, 8}, between(1, 8))));
  rows.push_back(KnobRow::of<&Schedule::register_vectors>("register_vectors", Scope::cpu)
                     .meaning("Vectors of the matrix products' register tile (vectors x rows).")
                     .on_cpu(tiled({1, 2, 3}, between(1, 4))));
  rows.push_back(KnobRow::of<&Schedule::kv_splits>("kv_splits", Scope::attention)
                     .meaning("Split the keys this many ways and merge the partial states after: "
                              "work for short query lengths.")
                     .on_cpu({{1, 2, 4}, powers_of_two(1, 8), materialized_only()})
                     .on_gpu({{1, 2, 4, 8, 32, 128}, powers_of_two(1, 1024), materialized_only()}));
  rows.push_back(
      KnobRow::of<&Schedule::pv_rows>("pv_rows", Scope::cpu)
          .meaning(
              "Rows of P·V's own register tile (head-dim vectors x query rows); 0: the q·k tile's.")
          .on_cpu(tiled({0, 2, 4, 8}, between(0, 8)))
          .omitted_when_unset());
  rows.push_back(KnobRow::of<&Schedule::pv_vectors>("pv_vectors", Scope::cpu)
                     .meaning("Vectors of P·V's own register tile; 0: the q·k tile's.")
                     .on_cpu(tiled({0, 1, 2, 4}, between(0, 8)))
                     .omitted_when_unset());
  rows.push_back(
      KnobRow::of<&Schedule::pv_chunk>("pv_chunk", Scope::cpu)
          .meaning("Keys per P·V chunk (0: one pass). Every register tile of a chunk runs before "
                   "the next chunk, so its V rows and probabilities stay in L1.")
          .on_cpu(tiled({0, 16, 32, 64, 128}, {8, 512, false, 0}))
          .omitted_when_unset());
  rows.push_back(KnobRow::of<&Schedule::prefetch_blocks>("prefetch_blocks", Scope::cpu)
                     .meaning("Prefetch K and V this many key blocks ahead of the rows being read "
                              "(0: none), a cache line at a time; needs `dot_axis` `head_dim`.")
                     .on_cpu({{0, 1}, between(0, 4), {Form::materialized, Form::fused}})
                     .omitted_when_unset());
}

// A layer's projection GEMMs. Blocks are multiples of every register-tile row count.
void add_layer_rows(std::vector<KnobRow>& rows) {
  rows.push_back(KnobRow::of<&Schedule::projection_vectors>("projection_vectors", Scope::layer)
                     .meaning("A layer's projection GEMMs: vectors of their register tile.")
                     .on_cpu({{1, 2, 4}, between(1, 4)})
                     .omitted_when_unset());
  rows.push_back(KnobRow::of<&Schedule::projection_rows>("projection_rows", Scope::layer)
                     .meaning("A layer's projection GEMMs: rows of their register tile.")
                     .on_cpu({{4, 6, 8, 12}, between(1, 16)})
                     .omitted_when_unset());
  rows.push_back(
      KnobRow::of<&Schedule::projection_block>("projection_block", Scope::layer)
          .meaning(
              "A layer's projection GEMMs: rows kept in cache while every weight column passes.")
          .on_cpu({{24, 48, 96, 192}, between(1, 1024)})
          .omitted_when_unset());
  rows.push_back(KnobRow::of<&Schedule::projection_fuse_q>("projection_fuse_q", Scope::layer)
                     .meaning("A layer: project Q per query tile, where the attention reads it "
                              "(1), or once before it (0).")
                     .on_cpu({{0, 1}, between(0, 1), materialized_only()})
                     .omitted_when_unset());
}

// A CUDA block's threads and its shared-memory staging.
void add_gpu_rows(std::vector<KnobRow>& rows) {
  rows.push_back(KnobRow::of<&Schedule::gpu_threads_x>("gpu_threads_x", Scope::gpu)
                     .meaning("CUDA: a block's threads along the head dim and key lanes.")
                     .on_gpu({{1, 4, 8, 16, 32}, powers_of_two(1, 32)})
                     .omitted_when_unset());
  rows.push_back(KnobRow::of<&Schedule::gpu_threads_y>("gpu_threads_y", Scope::gpu)
                     .meaning("CUDA: a block's threads along query rows.")
                     .on_gpu({{1, 2, 4, 8, 16, 32}, powers_of_two(1, 64)})
                     .omitted_when_unset());
  rows.push_back(KnobRow::of<&Schedule::gpu_stage_kv>("gpu_stage_kv", Scope::gpu)
                     .meaning("CUDA: stage each K/V block in shared memory before the matrix "
                              "products read it.")
                     .on_gpu({{0, 1}, between(0, 1), {Form::online_rows, Form::online_mma}})
                     .omitted_when_unset());
}

// Rows in the order searches draw them; a new row goes at the end of its group.
std::vector<KnobRow> make_table() {
  std::vector<KnobRow> rows;
  add_enum_rows(rows);
  add_tile_rows(rows);
  add_layer_rows(rows);
  add_gpu_rows(rows);
  // Searched only for specs whose KV groups have several heads (space.cpp).
  rows.push_back(KnobRow::of<&Schedule::group_heads>("group_heads", Scope::cpu)
                     .meaning("A tile's rows are the (query, head) pairs of one KV group, so each "
                              "K/V row it reads serves every query head of the group (GQA, MQA).")
                     .encoded_as(Encoding::boolean)
                     .on_cpu({{0, 1}, std::nullopt, materialized_only()})
                     .omitted_when_unset()
                     .seen_by_model_as(Feature::flag));
  // Searched only for bf16 specs on targets with bf16 dot products (space.cpp).
  rows.push_back(KnobRow::of<&Schedule::bf16_dots>("bf16_dots", Scope::cpu)
                     .meaning("bf16 storage on targets with AVX512_BF16: q·k and P·V as "
                              "`vdpbf16ps` dot products over pairs, accumulating in f32; q * scale "
                              "and the probabilities are rounded to bf16.")
                     .encoded_as(Encoding::boolean)
                     .on_cpu({{0, 1}, std::nullopt, {Form::materialized, Form::fused}})
                     .omitted_when_unset()
                     .seen_by_model_as(Feature::flag));
  // Never searched: skipping is never slower.
  rows.push_back(KnobRow::of<&Schedule::skip_masked_blocks>("skip_masked_blocks", Scope::attention)
                     .meaning("Skip key blocks that a whole query tile cannot see.")
                     .encoded_as(Encoding::boolean)
                     .on_cpu({{}, std::nullopt, materialized_only()})
                     .on_gpu({{}, std::nullopt, materialized_only()})
                     .seen_by_model_as(Feature::flag));
  // Searched only for specs with an int8 cache (space.cpp).
  rows.push_back(KnobRow::of<&Schedule::int16_dots>("int16_dots", Scope::cpu)
                     .meaning("An int8 K cache (kv8), q·k along the head dim: q * scale in int16 "
                              "levels of a step per row, dotted with the widened K levels in "
                              "pairs accumulating in int32 (`vpdpwssd` with AVX512_VNNI, "
                              "`vpmaddwd` otherwise).")
                     .encoded_as(Encoding::boolean)
                     .on_cpu({{0, 1}, std::nullopt, {Form::materialized, Form::fused}})
                     .omitted_when_unset()
                     .seen_by_model_as(Feature::flag));
  return rows;
}

[[noreturn]] void wrong_json(const KnobRow& row, const nlohmann::json& json, const char* what) {
  throw ScheduleError(row.name(), fmt::format("{} is not {}", json.dump(), what));
}

int name_code(const KnobRow& row, const nlohmann::json& json) {
  if (!json.is_string()) wrong_json(row, json, "a string");
  const std::string text = json.get<std::string>();
  for (size_t n = 0; n < row.names().size(); ++n) {
    if (text == row.names()[n]) return static_cast<int>(n);
  }
  throw ScheduleError(row.name(), fmt::format("'{}' is unknown; expected one of {}", text,
                                              fmt::join(row.names(), ", ")));
}

}  // namespace

bool KnobRange::contains(int value) const {
  if (off && value == *off) return true;
  return value >= min && value <= max && (!power_of_two || (value & (value - 1)) == 0);
}

std::string KnobRange::describe(int value) const {
  std::string expected = fmt::format("{}..{}", min, max);
  if (power_of_two) {
    std::vector<int> powers;
    for (int p = min; p <= max; p *= 2) powers.push_back(p);
    expected = fmt::format("{}", fmt::join(powers.begin(), powers.end() - 1, ", "));
    expected += powers.size() > 1 ? fmt::format(" or {}", powers.back()) : "";
  }
  if (off) expected = fmt::format("{} (off) or {}", *off, expected);
  return fmt::format("{}; expected {}", value, expected);
}

KnobRow& KnobRow::encoded_as(KnobEncoding encoding, std::vector<const char*> names) {
  encoding_ = encoding;
  names_ = std::move(names);
  return *this;
}
KnobRow& KnobRow::on_cpu(KnobOnTarget cpu) {
  cpu_ = std::move(cpu);
  return *this;
}
KnobRow& KnobRow::on_gpu(KnobOnTarget gpu) {
  gpu_ = std::move(gpu);
  return *this;
}
KnobRow& KnobRow::omitted_when_unset() {
  omitted_when_unset_ = true;
  return *this;
}
KnobRow& KnobRow::seen_by_model_as(KnobFeature feature) {
  feature_ = feature;
  return *this;
}
KnobRow& KnobRow::meaning(const char* text) {
  meaning_ = text;
  return *this;
}

KnobRow& KnobRow::formerly(const char* legacy_name) {
  legacy_name_ = legacy_name;
  return *this;
}

bool KnobRow::ignored(TargetKind kind, Form form) const {
  if (kind == TargetKind::gpu && scope_ == KnobScope::cpu) return true;
  const std::vector<Form>& forms = on(kind).ignored_by;
  return std::find(forms.begin(), forms.end(), form) != forms.end();
}

nlohmann::json KnobRow::to_json(int code) const {
  switch (encoding_) {
    case KnobEncoding::integer:
      return code;
    case KnobEncoding::boolean:
      return code != 0;
    case KnobEncoding::name:
      return names_.at(code);
    case KnobEncoding::name_list: {
      nlohmann::json list = nlohmann::json::array();
      for (int value : list_of_code(code)) list.push_back(names_.at(value));
      return list;
    }
  }
  return nullptr;
}

int KnobRow::from_json(const nlohmann::json& json) const {
  switch (encoding_) {
    case KnobEncoding::integer: {
      if (!json.is_number_integer()) wrong_json(*this, json, "an integer");
      const auto value = json.get<int64_t>();
      if (value < 0 || value > (stored_as_bool_ ? 1 : 1 << 20)) {
        throw ScheduleError(name_, fmt::format("{} is out of range{}", value,
                                               stored_as_bool_ ? "; expected 0 or 1" : ""));
      }
      return static_cast<int>(value);
    }
    case KnobEncoding::boolean:
      if (!json.is_boolean()) wrong_json(*this, json, "a boolean");
      return json.get<bool>() ? 1 : 0;
    case KnobEncoding::name:
      return name_code(*this, json);
    case KnobEncoding::name_list: {
      if (!json.is_array()) wrong_json(*this, json, "an array");
      std::vector<int> values;
      std::set<int> seen;
      for (const auto& entry : json) {
        const int value = name_code(*this, entry);
        if (!seen.insert(value).second) {
          throw ScheduleError(name_, fmt::format("'{}' is listed twice", names_[value]));
        }
        values.push_back(value);
      }
      return code_of_list(values);
    }
  }
  return 0;
}

std::string KnobRow::describe(int code) const {
  switch (encoding_) {
    case KnobEncoding::integer:
      return std::to_string(code);
    case KnobEncoding::boolean:
      return code != 0 ? "true" : "false";
    case KnobEncoding::name:
      return names_.at(code);
    case KnobEncoding::name_list: {
      std::string text;
      for (int value : list_of_code(code))
        text += (text.empty() ? "" : ",") + std::string(names_.at(value));
      return text;
    }
  }
  return {};
}

// Base 5, least significant first: each digit is a value plus one, so the
// empty list is 0 and no list has leading zeros.
int KnobRow::code_of_list(const std::vector<int>& values) {
  int code = 0;
  for (auto value = values.rbegin(); value != values.rend(); ++value) code = code * 5 + *value + 1;
  return code;
}

std::vector<int> KnobRow::list_of_code(int code) {
  std::vector<int> values;
  for (; code > 0; code /= 5) values.push_back(code % 5 - 1);
  return values;
}

const std::vector<KnobRow>& knob_table() {
  static const std::vector<KnobRow> table = make_table();
  return table;
}

const KnobRow& knob(const std::string& name) {
  for (const KnobRow& row : knob_table()) {
    if (row.name() == name || row.legacy_name() == name) return row;
  }
  throw ScheduleError(name, "is not a schedule field");
}

nlohmann::json with_current_knob_names(nlohmann::json schedule) {
  if (!schedule.is_object()) return schedule;
  for (const KnobRow& row : knob_table()) {
    if (!row.legacy_name() || !schedule.contains(*row.legacy_name())) continue;
    if (!schedule.contains(row.name())) schedule[row.name()] = schedule[*row.legacy_name()];
    schedule.erase(*row.legacy_name());
  }
  return schedule;
}

}  // namespace attnforge::schedules
