#include "space.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "cuda_limits.h"
#include "layer_schedule.h"
#include "presets.h"

namespace attnforge::schedules {

namespace {

bool power_of_two(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Vector registers the accumulators of a register tile may take (of 16 or 32).
int accumulator_budget(const Halide::Target& target) {
  return target.has_feature(Halide::Target::AVX512) ? 28 : 14;
}

bool runs_in_parallel(const Schedule& s, ParallelLoop loop) {
  return std::find(s.parallel.begin(), s.parallel.end(), loop) != s.parallel.end();
}

}  // namespace

Schedule with_knob(Schedule s, const std::string& name, int value) {
  for (const IntKnob& knob : int_knobs()) {
    if (name == knob.name) {
      s.*knob.member = value;
      return s;
    }
  }
  throw ScheduleError(name, "is not an integer knob");
}

namespace {

// Messages are formatted only for the failing check: check() runs on every
// candidate of a search.
#define ATTNFORGE_REQUIRE(ok, field, ...) \
  if (!(ok)) return ScheduleError(field, fmt::format(__VA_ARGS__))

std::optional<ScheduleError> check_target(const Schedule& s, const Halide::Target& target) {
  ATTNFORGE_REQUIRE(target.arch == Halide::Target::X86 && !target.has_gpu_feature(), "target",
                    "'{}' is not an x86 CPU target; these schedules are for x86 CPUs",
                    target.to_string());
  ATTNFORGE_REQUIRE(s.vector_width == 4 || s.vector_width == 8 || s.vector_width == 16,
                    "vector_width", "{}; expected 4, 8 or 16", s.vector_width);
  ATTNFORGE_REQUIRE(s.vector_width <= native_vector_width(target), "vector_width",
                    "{} lanes need {}; target '{}' has {} f32 lanes", s.vector_width,
                    s.vector_width == 16 ? "AVX-512" : "AVX", target.to_string(),
                    native_vector_width(target));
  return std::nullopt;
}

std::optional<ScheduleError> check_cuda(const Schedule& s, const AttentionSpec& spec,
                                        const Halide::Target& target) {
  // OpenCL runs the same GPU loops: with a CPU OpenCL device, it checks CUDA
  // schedules where there is no GPU.
  ATTNFORGE_REQUIRE(
      target.has_feature(Halide::Target::CUDA) || target.has_feature(Halide::Target::OpenCL),
      "target", "'{}' is neither a CUDA nor an OpenCL target; GPU schedules need one",
      target.to_string());
  ATTNFORGE_REQUIRE(is_gpu_schedule(s), "gpu_threads_x",
                    "a CUDA schedule sets gpu_threads_x and gpu_threads_y");
  const int x = s.gpu_threads_x, y = s.gpu_threads_y;
  ATTNFORGE_REQUIRE(x >= 1 && x <= 32 && power_of_two(x), "gpu_threads_x",
                    "{}; expected 1, 2, 4, 8, 16 or 32", x);
  ATTNFORGE_REQUIRE(y >= 1 && y <= 64 && power_of_two(y), "gpu_threads_y",
                    "{}; expected a power of two up to 64", y);
  ATTNFORGE_REQUIRE(x * y >= 32 && x * y <= kCudaMaxThreadsPerBlock, "gpu_threads_y",
                    "{} x {} threads per block; expected at least a warp (32) and at most {}", x, y,
                    kCudaMaxThreadsPerBlock);
  ATTNFORGE_REQUIRE(s.gpu_stage_kv == 0 || s.gpu_stage_kv == 1, "gpu_stage_kv",
                    "{}; expected 0 or 1", s.gpu_stage_kv);
  // Halide 21's PTX backend aborts on bf16 loads; f16 is native.
  ATTNFORGE_REQUIRE(spec.dtype != DType::bf16, "dtype",
                    "bf16 storage has no CUDA kernel (Halide's CUDA backend cannot compile it); "
                    "use f16 or f32");
  ATTNFORGE_REQUIRE(spec.head_dim % x == 0, "gpu_threads_x",
                    "head_dim {} is not a multiple of {} threads", spec.head_dim, x);
  ATTNFORGE_REQUIRE(s.query_tile >= y && s.query_tile <= 256 && s.query_tile % y == 0, "query_tile",
                    "{} must be a multiple of gpu_threads_y ({}) up to 256", s.query_tile, y);
  ATTNFORGE_REQUIRE(s.key_block >= x && s.key_block <= 512 && s.key_block % x == 0, "key_block",
                    "{} must be a multiple of gpu_threads_x ({}) up to 512", s.key_block, x);
  // The fused form's passes each need their own copy of a key chunk's
  // logits; on a GPU the online form does its work in one pass.
  ATTNFORGE_REQUIRE(s.form != Form::fused, "form",
                    "fused has no CUDA schedule; use online or materialized");
  ATTNFORGE_REQUIRE(s.form == Form::materialized || !spec.return_weights, "form",
                    "{} cannot return attention weights; use materialized", to_string(s.form));
  if (cuda_warp_block(s)) {
    ATTNFORGE_REQUIRE(target.has_feature(Halide::Target::CUDA), "gpu_threads_y",
                      "a block of one warp (32 x 1) keeps its state in lane registers, which "
                      "needs CUDA; '{}' has none",
                      target.to_string());
    ATTNFORGE_REQUIRE(s.kv_splits == 1, "kv_splits",
                      "{}; a block of one warp (32 x 1) takes every key block (1)", s.kv_splits);
    // Halide 21 loses a symbol lowering the key lengths' loads with lane shuffles.
    ATTNFORGE_REQUIRE(!spec.key_padding, "key_padding",
                      "a block of one warp (gpu_threads 32 x 1) has no kernel with key padding "
                      "(Halide's lane lowering fails on it); use more rows of threads");
    ATTNFORGE_REQUIRE(s.query_tile <= kCudaWarp, "query_tile",
                      "{}; a block of one warp reduces each row in its own lane (at most {})",
                      s.query_tile, kCudaWarp);
  }
  const int shared = cuda_shared_bytes(s, spec.head_dim);
  ATTNFORGE_REQUIRE(shared <= kCudaMaxSharedBytes, "query_tile",
                    "the block needs {} bytes of shared memory; a block has {}", shared,
                    kCudaMaxSharedBytes);
  const int values = cuda_register_values(s, spec.head_dim);
  ATTNFORGE_REQUIRE(values <= kCudaAccumulatorBudget, "gpu_threads_y",
                    "each thread keeps {} accumulators; at most {} fit in its {} registers", values,
                    kCudaAccumulatorBudget, kCudaMaxRegistersPerThread);
  return std::nullopt;
}

std::optional<ScheduleError> check_splits(const Schedule& s) {
  ATTNFORGE_REQUIRE(s.kv_splits >= 1 && s.kv_splits <= 8 && power_of_two(s.kv_splits), "kv_splits",
                    "{}; expected 1, 2, 4 or 8", s.kv_splits);
  ATTNFORGE_REQUIRE(s.kv_splits == 1 || s.form == Form::online, "kv_splits",
                    "{} splits need the online form, not {}", s.kv_splits, to_string(s.form));
  ATTNFORGE_REQUIRE(s.kv_splits > 1 || !runs_in_parallel(s, ParallelLoop::kv_splits), "parallel",
                    "'kv_splits' can run in parallel only with kv_splits > 1");
  return std::nullopt;
}

// The register tiles and loop tiles of the fused and online forms.
std::optional<ScheduleError> check_tiles(const Schedule& s, const AttentionSpec& spec,
                                         const Halide::Target& target) {
  ATTNFORGE_REQUIRE(!spec.return_weights, "form",
                    "{} cannot return attention weights; use materialized", to_string(s.form));
  ATTNFORGE_REQUIRE(s.register_vectors >= 1 && s.register_vectors <= 4, "register_vectors",
                    "{}; expected 1..4", s.register_vectors);
  ATTNFORGE_REQUIRE(s.register_rows >= 1 && s.register_rows <= 8, "register_rows",
                    "{}; expected 1..8", s.register_rows);
  const int accumulators = s.register_vectors * s.register_rows;
  ATTNFORGE_REQUIRE(accumulators <= accumulator_budget(target), "register_rows",
                    "a {}x{} register tile needs {} accumulators; the target keeps {}",
                    s.register_vectors, s.register_rows, accumulators, accumulator_budget(target));
  ATTNFORGE_REQUIRE(s.pv_vectors >= 0 && s.pv_vectors <= 4 && s.pv_rows >= 0 && s.pv_rows <= 8,
                    "pv_rows", "a {}x{} P.V tile; expected 0..4 vectors x 0..8 rows (0: as q.k)",
                    s.pv_vectors, s.pv_rows);
  const int pv_accumulators = effective_pv_vectors(s) * effective_pv_rows(s);
  ATTNFORGE_REQUIRE(pv_accumulators <= accumulator_budget(target), "pv_rows",
                    "a {}x{} P.V tile needs {} accumulators; the target keeps {}",
                    effective_pv_vectors(s), effective_pv_rows(s), pv_accumulators,
                    accumulator_budget(target));
  ATTNFORGE_REQUIRE(s.query_tile % effective_pv_rows(s) == 0, "pv_rows",
                    "query_tile {} is not a multiple of the P.V tile's {} rows", s.query_tile,
                    effective_pv_rows(s));
  ATTNFORGE_REQUIRE(spec.head_dim % s.vector_width == 0, "vector_width",
                    "head_dim {} is not a multiple of {} lanes", spec.head_dim, s.vector_width);
  const int tile_rows = s.vector_width * s.register_vectors;
  ATTNFORGE_REQUIRE(
      s.query_tile >= tile_rows && s.query_tile <= 256 && s.query_tile % tile_rows == 0,
      "query_tile", "{} must be a multiple of vector_width x register_vectors ({}) up to 256",
      s.query_tile, tile_rows);
  ATTNFORGE_REQUIRE(s.query_tile % s.register_rows == 0, "query_tile",
                    "{} is not a multiple of register_rows ({})", s.query_tile, s.register_rows);
  ATTNFORGE_REQUIRE(s.form == Form::fused || (s.key_block >= 8 && s.key_block <= 512 &&
                                              s.key_block % s.register_rows == 0),
                    "key_block", "{} must be 8..512 and a multiple of register_rows ({})",
                    s.key_block, s.register_rows);
  ATTNFORGE_REQUIRE(s.unroll >= 1 && s.unroll <= 8 && power_of_two(s.unroll), "unroll",
                    "{}; expected 1, 2, 4 or 8", s.unroll);
  ATTNFORGE_REQUIRE(
      s.pv_chunk == 0 || (s.pv_chunk >= 8 && s.pv_chunk <= 512 && s.pv_chunk % s.unroll == 0),
      "pv_chunk", "{}; expected 0 (one pass) or 8..512 keys, a multiple of unroll ({})", s.pv_chunk,
      s.unroll);
  ATTNFORGE_REQUIRE(s.form != Form::online || s.key_block % std::max(s.pv_chunk, 1) == 0,
                    "pv_chunk", "{} does not divide key_block ({})", s.pv_chunk, s.key_block);
  return std::nullopt;
}

#undef ATTNFORGE_REQUIRE

}  // namespace

std::vector<std::string> presets_for(const Halide::Target& target) {
  std::vector<std::string> names;
  for (const std::string& name : preset_names()) {
    if (is_gpu_schedule(load_preset(name)) == target.has_gpu_feature()) names.push_back(name);
  }
  return names;
}

// Target strings may name only the newest feature (e.g. avx2, avx512_zen4).
int native_vector_width(const Halide::Target& target) {
  using T = Halide::Target;
  if (target.features_any_of({T::AVX512, T::AVX512_KNL, T::AVX512_Skylake, T::AVX512_Cannonlake,
                              T::AVX512_SapphireRapids, T::AVX512_Zen4, T::AVX512_Zen5})) {
    return 16;
  }
  if (target.features_any_of({T::AVX, T::AVX2, T::AVXVNNI})) return 8;
  return 4;
}

std::optional<ScheduleError> check(const Schedule& s, const AttentionSpec& spec,
                                   const Halide::Target& target) {
  for (const IntKnob& knob : int_knobs()) {
    if (knob.projection && s.*knob.member != 0) {
      return ScheduleError(knob.name, "only a layer's schedule has projection knobs");
    }
  }
  if (target.has_gpu_feature()) {
    if (auto misfit = check_cuda(s, spec, target)) return misfit;
    return check_splits(s);
  }
  for (const IntKnob& knob : int_knobs()) {
    if (knob.gpu && s.*knob.member != 0) {
      return ScheduleError(knob.name, "only a CUDA schedule has GPU knobs");
    }
  }
  if (auto misfit = check_target(s, target)) return misfit;
  if (auto misfit = check_splits(s)) return misfit;
  if (s.form == Form::materialized) return std::nullopt;
  return check_tiles(s, spec, target);
}

void validate(const Schedule& s, const AttentionSpec& spec, const Halide::Target& target) {
  spec.validate();
  if (auto misfit = check(s, spec, target)) throw *misfit;
}

ScheduleSpace::ScheduleSpace(const AttentionSpec& spec, const Halide::Target& target)
    : spec_(spec), target_(target) {
  spec.validate();
  if (target.has_gpu_feature()) {
    // Blocks of query_tile rows; threads over lanes (x) and rows (y).
    forms_ = {Form::materialized};
    if (!spec.return_weights) forms_ = {Form::online, Form::materialized};
    knobs_ = {{"query_tile", {8, 16, 32, 64}},   {"key_block", {8, 16, 32, 64, 128, 256}},
              {"gpu_threads_x", {4, 8, 16, 32}}, {"gpu_threads_y", {1, 2, 4, 8, 16, 32}},
              {"gpu_stage_kv", {0, 1}},          {"kv_splits", {1, 2, 4, 8}}};
    parallel_choices_ = {Schedule{}.parallel};
    store_levels_ = {StoreLevel::tile};
    return;
  }
  forms_ = {Form::materialized};
  if (!spec.return_weights) forms_ = {Form::online, Form::fused, Form::materialized};
  std::vector<int> widths = {8};
  if (native_vector_width(target) == 16) widths.push_back(16);
  if (native_vector_width(target) == 4) widths = {4};
  // Key blocks include multiples of 3 so that 3- and 6-row register tiles fit.
  knobs_ = {{"query_tile", {16, 32, 48, 64, 96, 128}},
            {"key_block", {16, 32, 48, 64, 96, 128, 192, 256}},
            {"vector_width", widths},
            {"unroll", {1, 2, 4}},
            {"register_rows", {2, 3, 4, 6, 8}},
            {"register_vectors", {1, 2, 3}},
            {"kv_splits", {1, 2, 4}},
            {"pv_rows", {0, 2, 4, 8}},
            {"pv_vectors", {0, 1, 2, 4}},
            {"pv_chunk", {0, 16, 32, 64, 128}}};
  using P = ParallelLoop;
  parallel_choices_ = {{P::batch, P::heads, P::query_tiles},
                       {P::batch, P::heads},
                       {P::batch, P::heads, P::query_tiles, P::kv_splits}};
}

ScheduleSpace::ScheduleSpace(const LayerSpec& layer, const Halide::Target& target)
    : ScheduleSpace(layer.attention, target) {
  layer.validate();
  layer_ = layer;
  // Blocks are multiples of every register-tile row count.
  knobs_.push_back({"projection_vectors", {1, 2, 4}});
  knobs_.push_back({"projection_rows", {4, 6, 8, 12}});
  knobs_.push_back({"projection_block", {24, 48, 96, 192}});
  knobs_.push_back({"projection_fuse_q", {0, 1}});
}

void ScheduleSpace::restrict_knob(const std::string& name, std::vector<int> values) {
  if (values.empty()) throw ScheduleError(name, "needs at least one value");
  for (Knob& knob : knobs_) {
    if (knob.name == name) {
      knob.values = std::move(values);
      return;
    }
  }
  throw ScheduleError(name, "is not an integer knob of the space");
}

bool ScheduleSpace::contains(const Schedule& s) const {
  return layer_ ? !check_layer(s, *layer_, target_) : !check(s, spec_, target_);
}

namespace {

// A cheap identity for deduplicating millions of partial schedules (JSON is slow).
std::string identity(const Schedule& s) {
  std::string key;
  key.reserve(64);
  key += static_cast<char>('0' + static_cast<int>(s.form));
  key += static_cast<char>('0' + static_cast<int>(s.intermediates));
  key += s.skip_masked_blocks ? '1' : '0';
  for (ParallelLoop loop : s.parallel) key += static_cast<char>('a' + static_cast<int>(loop));
  for (const IntKnob& knob : int_knobs()) {
    key += ',';
    key += std::to_string(s.*knob.member);
  }
  return key;
}

}  // namespace

std::vector<Schedule> ScheduleSpace::enumerate() const {
  std::vector<Schedule> all;
  std::set<std::string> seen;
  for (Form form : forms_) {
    for (const auto& parallel : parallel_choices_) {
      std::vector<Schedule> partial;
      for (StoreLevel level : store_levels_) {
        Schedule base;
        base.form = form;
        base.parallel = parallel;
        base.intermediates = level;
        partial.push_back(base);
      }
      for (const Knob& knob : knobs_) {
        std::vector<Schedule> next;
        for (const Schedule& s : partial) {
          for (int value : knob.values) next.push_back(with_knob(s, knob.name, value));
        }
        // Knobs a form ignores collapse here (same canonical form, same
        // outcome of the knobs still to set), so the product stays small.
        partial.clear();
        std::set<std::string> distinct;
        for (const Schedule& s : next) {
          if (distinct.insert(identity(canonical(s))).second) partial.push_back(s);
        }
      }
      for (const Schedule& s : partial) {
        Schedule c = canonical(s);
        if (contains(c) && seen.insert(identity(c)).second) all.push_back(c);
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
    s.intermediates =
        store_levels_[std::uniform_int_distribution<size_t>(0, store_levels_.size() - 1)(rng)];
    for (const Knob& knob : knobs_) {
      size_t pick = std::uniform_int_distribution<size_t>(0, knob.values.size() - 1)(rng);
      s = with_knob(s, knob.name, knob.values[pick]);
    }
    if (contains(s)) return canonical(s);
  }
  throw ScheduleError("space", "no legal schedule found for " + spec_.to_string());
}

}  // namespace attnforge::schedules
