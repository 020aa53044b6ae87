#include "schedule_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "cuda_limits.h"

namespace attnforge::schedules {

namespace {

// Vector registers the accumulators of a register tile may take (of 16 or 32).
int accumulator_budget(const Halide::Target& target) {
  return target.has_feature(Halide::Target::AVX512) ? 28 : 14;
}

bool runs_in_parallel(const Schedule& s, ParallelLoop loop) {
  return std::find(s.parallel.begin(), s.parallel.end(), loop) != s.parallel.end();
}

const char* processor_name(TargetKind kind) {
  return kind == TargetKind::gpu ? "CUDA" : "CPU";
}

// Messages are formatted only for the failing check: check() runs on every
// candidate of a search.
#define ATTNFORGE_REQUIRE(ok, field, ...) \
  if (!(ok)) return ScheduleError(field, fmt::format(__VA_ARGS__))

// What the processor must be before any knob is looked at.
std::optional<ScheduleError> check_target(const Schedule& s, const Halide::Target& target) {
  if (kind_of(target) == TargetKind::cpu) {
    ATTNFORGE_REQUIRE(target.arch == Halide::Target::X86, "target",
                      "'{}' is not an x86 CPU target; these schedules are for x86 CPUs",
                      target.to_string());
    return std::nullopt;
  }
  // OpenCL runs the same GPU loops: with a CPU OpenCL device, it checks CUDA
  // schedules where there is no GPU.
  ATTNFORGE_REQUIRE(
      target.has_feature(Halide::Target::CUDA) || target.has_feature(Halide::Target::OpenCL),
      "target", "'{}' is neither a CUDA nor an OpenCL target; GPU schedules need one",
      target.to_string());
  ATTNFORGE_REQUIRE(is_gpu_schedule(s), "gpu_threads_x",
                    "a CUDA schedule sets gpu_threads_x and gpu_threads_y");
  return std::nullopt;
}

// The rules between knobs that hold on every target.
std::optional<ScheduleError> check_shared(const Schedule& s, const AttentionSpec& spec) {
  ATTNFORGE_REQUIRE(s.form == Form::materialized || !spec.return_weights, "form",
                    "{} cannot return attention weights; use materialized", to_string(s.form));
  ATTNFORGE_REQUIRE(s.kv_splits == 1 || s.form == Form::online || s.form == Form::online_rows,
                    "kv_splits", "{} splits need an online form, not {}", s.kv_splits,
                    to_string(s.form));
  ATTNFORGE_REQUIRE(s.kv_splits > 1 || !runs_in_parallel(s, ParallelLoop::kv_splits), "parallel",
                    "'kv_splits' can run in parallel only with kv_splits > 1");
  return std::nullopt;
}

// online_rows: threads along key splits (x) and query rows (y), every row
// whole in its thread's registers.
std::optional<ScheduleError> check_cuda_rows(const Schedule& s, const AttentionSpec& spec) {
  ATTNFORGE_REQUIRE(s.kv_splits % s.gpu_threads_x == 0, "gpu_threads_x",
                    "{} threads along key splits must divide kv_splits ({})", s.gpu_threads_x,
                    s.kv_splits);
  const int values = cuda_register_values(s, spec.head_dim);
  const int rows = s.query_tile / s.gpu_threads_y;
  const char* knob = rows > 1 ? "gpu_threads_y" : s.key_block > 1 ? "key_block" : "form";
  ATTNFORGE_REQUIRE(values <= kCudaRowBudget, knob,
                    "online_rows keeps {} row(s) of head_dim {} and the K rows of a block of {} "
                    "keys in each thread's registers ({} values); at most {} fit in {}",
                    rows, spec.head_dim, s.key_block, values, kCudaRowBudget,
                    kCudaMaxRegistersPerThread);
  return std::nullopt;
}

// online_mma: a warp of lanes holding mma fragments, gpu_threads_y warps per block.
std::optional<ScheduleError> check_cuda_mma(const Schedule& s, const AttentionSpec& spec,
                                            const Halide::Target& target) {
  ATTNFORGE_REQUIRE(spec.dtype != DType::f32, "dtype",
                    "online_mma multiplies f16 or bf16 on tensor cores; f32 takes online or "
                    "online_rows");
  ATTNFORGE_REQUIRE(target.has_feature(Halide::Target::CUDA), "form",
                    "online_mma needs CUDA's mma.sync; '{}' has none", target.to_string());
  ATTNFORGE_REQUIRE(spec.head_dim % 32 == 0, "form",
                    "online_mma takes head dims in steps of 32 (two mma k-steps); {} is not",
                    spec.head_dim);
  ATTNFORGE_REQUIRE(s.gpu_threads_x == kCudaWarp, "gpu_threads_x",
                    "{}; online_mma's x threads are the {} lanes of a warp", s.gpu_threads_x,
                    kCudaWarp);
  ATTNFORGE_REQUIRE(s.gpu_threads_y <= kCudaMmaMaxWarps, "gpu_threads_y",
                    "{} warps per block; online_mma takes at most {}", s.gpu_threads_y,
                    kCudaMmaMaxWarps);
  ATTNFORGE_REQUIRE(s.query_tile == 16 || s.query_tile == 32, "query_tile",
                    "{}; online_mma gives a warp one or two 16-row mma tiles (16 or 32)",
                    s.query_tile);
  ATTNFORGE_REQUIRE(s.key_block == 32 || s.key_block == 64, "key_block",
                    "{}; online_mma takes key blocks of 32 or 64 (pairs of 16-key mma steps)",
                    s.key_block);
  ATTNFORGE_REQUIRE(s.kv_splits == 1, "kv_splits", "{}; online_mma does not split keys",
                    s.kv_splits);
  const int values = cuda_register_values(s, spec.head_dim);
  ATTNFORGE_REQUIRE(values <= kCudaMmaValueBudget, s.key_block > 32 ? "key_block" : "query_tile",
                    "online_mma's lanes would keep {} values of head_dim {} ({} query rows, key "
                    "blocks of {}); at most {} fit in {} registers",
                    values, spec.head_dim, s.query_tile, s.key_block, kCudaMmaValueBudget,
                    kCudaMaxRegistersPerThread);
  return std::nullopt;
}

std::optional<ScheduleError> check_cuda(const Schedule& s, const AttentionSpec& spec,
                                        const Halide::Target& target) {
  if (s.form == Form::online_mma) return check_cuda_mma(s, spec, target);
  ATTNFORGE_REQUIRE(spec.dtype != DType::bf16, "dtype",
                    "bf16 storage on CUDA takes the tensor-core form online_mma; {} cannot "
                    "(Halide's CUDA backend cannot load bf16)",
                    to_string(s.form));
  const int x = s.gpu_threads_x, y = s.gpu_threads_y;
  ATTNFORGE_REQUIRE(x * y >= 32 && x * y <= kCudaMaxThreadsPerBlock, "gpu_threads_y",
                    "{} x {} threads per block; expected at least a warp (32) and at most {}", x, y,
                    kCudaMaxThreadsPerBlock);
  ATTNFORGE_REQUIRE(s.query_tile >= y && s.query_tile % y == 0, "query_tile",
                    "{} must be a multiple of gpu_threads_y ({})", s.query_tile, y);
  if (s.form == Form::online_rows) return check_cuda_rows(s, spec);
  ATTNFORGE_REQUIRE(s.kv_splits <= kCudaBlockStateSplits, "kv_splits",
                    "{}; a block-level running state takes at most {} splits (online_rows "
                    "takes more)",
                    s.kv_splits, kCudaBlockStateSplits);
  // A thread's chunk of the head dim or a key block is one vector: OpenCL C
  // has none wider than 16.
  ATTNFORGE_REQUIRE(x >= kCudaMinLaneThreads, "gpu_threads_x",
                    "{}; {} takes at least {} threads along the head dim and keys (1 is for "
                    "online_rows)",
                    x, to_string(s.form), kCudaMinLaneThreads);
  ATTNFORGE_REQUIRE(spec.head_dim % x == 0, "gpu_threads_x",
                    "head_dim {} is not a multiple of {} threads", spec.head_dim, x);
  ATTNFORGE_REQUIRE(s.key_block >= x && s.key_block % x == 0, "key_block",
                    "{} must be a multiple of gpu_threads_x ({})", s.key_block, x);
  if (cuda_warp_block(s)) {
    ATTNFORGE_REQUIRE(target.has_feature(Halide::Target::CUDA), "gpu_threads_y",
                      "a block of one warp (32 x 1) keeps its state in lane registers, which "
                      "needs CUDA; '{}' has none",
                      target.to_string());
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

// The register tiles and loop tiles of the fused and online forms on x86.
std::optional<ScheduleError> check_tiles(const Schedule& s, const AttentionSpec& spec,
                                         const Halide::Target& target) {
  const int accumulators = s.register_vectors * s.register_rows;
  ATTNFORGE_REQUIRE(accumulators <= accumulator_budget(target), "register_rows",
                    "a {}x{} register tile needs {} accumulators; the target keeps {}",
                    s.register_vectors, s.register_rows, accumulators, accumulator_budget(target));
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
  ATTNFORGE_REQUIRE(s.query_tile % s.register_rows == 0, "query_tile",
                    "{} is not a multiple of register_rows ({})", s.query_tile, s.register_rows);
  if (s.dot_axis == DotAxis::head_dim) {
    ATTNFORGE_REQUIRE(s.form == Form::online, "dot_axis",
                      "head_dim needs the online form's key blocks, not {}", to_string(s.form));
    ATTNFORGE_REQUIRE(s.key_block % s.vector_width == 0, "key_block",
                      "{} must be a multiple of vector_width ({}): statistics vectorize along keys",
                      s.key_block, s.vector_width);
    ATTNFORGE_REQUIRE(s.key_block % s.register_vectors == 0, "key_block",
                      "{} must be a multiple of register_vectors ({})", s.key_block,
                      s.register_vectors);
  } else {
    const int tile_rows = s.vector_width * s.register_vectors;
    ATTNFORGE_REQUIRE(s.query_tile >= tile_rows && s.query_tile % tile_rows == 0, "query_tile",
                      "{} must be a multiple of vector_width x register_vectors ({})", s.query_tile,
                      tile_rows);
    ATTNFORGE_REQUIRE(s.form == Form::fused || s.key_block % s.register_rows == 0, "key_block",
                      "{} must be a multiple of register_rows ({})", s.key_block, s.register_rows);
  }
  if (s.prefetch_blocks > 0) {
    ATTNFORGE_REQUIRE(s.dot_axis == DotAxis::head_dim && s.pv_chunk == 0, "prefetch_blocks",
                      "{} needs dot_axis head_dim and pv_chunk 0, whose loops stream K and V "
                      "row by row",
                      s.prefetch_blocks);
  }
  if (s.bf16_dots) {
    ATTNFORGE_REQUIRE(spec.dtype == DType::bf16, "bf16_dots",
                      "needs bf16 storage; {} is computed in f32", to_string(spec.dtype));
    ATTNFORGE_REQUIRE(!spec.quantized_kv(), "bf16_dots",
                      "needs bf16 K and V rows; an 8-bit cache (kv8, kvfp8) is widened to f32");
    ATTNFORGE_REQUIRE(has_bf16_dots(target), "bf16_dots",
                      "target '{}' has no bf16 dot products (avx512_zen4 or "
                      "avx512_sapphirerapids)",
                      target.to_string());
    ATTNFORGE_REQUIRE(s.form == Form::online && s.dot_axis == DotAxis::queries, "bf16_dots",
                      "needs the online form with dot_axis queries");
    ATTNFORGE_REQUIRE(s.vector_width == 16, "vector_width",
                      "{}; bf16 dot products take 16 f32 lanes", s.vector_width);
    ATTNFORGE_REQUIRE(s.key_block % 2 == 0, "key_block", "{}; bf16 dot products take keys in pairs",
                      s.key_block);
    ATTNFORGE_REQUIRE(s.pv_chunk == 0, "pv_chunk", "{}; bf16 dot products take P.V in one pass",
                      s.pv_chunk);
    // P.V's tile is then query vectors x head-dim rows.
    const int pv_rows = s.vector_width * effective_pv_vectors(s);
    ATTNFORGE_REQUIRE(s.query_tile % pv_rows == 0, "pv_vectors",
                      "query_tile {} is not a multiple of the P.V tile's {} query rows",
                      s.query_tile, pv_rows);
    ATTNFORGE_REQUIRE(spec.head_dim % effective_pv_rows(s) == 0, "pv_rows",
                      "head_dim {} is not a multiple of the P.V tile's {} head-dim rows",
                      spec.head_dim, effective_pv_rows(s));
  }
  if (s.int16_dots) {
    ATTNFORGE_REQUIRE(spec.kv_storage == KvStorage::int8, "int16_dots",
                      "needs an int8 K cache (kv8); {} K rows are dotted in f32",
                      spec.quantized_kv() ? "e4m3" : to_string(spec.dtype));
    ATTNFORGE_REQUIRE(s.form == Form::online && s.dot_axis == DotAxis::head_dim, "int16_dots",
                      "needs the online form with dot_axis head_dim");
    ATTNFORGE_REQUIRE(spec.head_dim % (2 * s.vector_width) == 0, "int16_dots",
                      "head_dim {} is not a multiple of 2 * vector_width ({}): q.k takes "
                      "vectors of head-dim pairs",
                      spec.head_dim, 2 * s.vector_width);
  }
  ATTNFORGE_REQUIRE(s.pv_chunk % s.unroll == 0, "pv_chunk",
                    "{} keys must be a multiple of unroll ({})", s.pv_chunk, s.unroll);
  ATTNFORGE_REQUIRE(s.form != Form::online || s.key_block % std::max(s.pv_chunk, 1) == 0,
                    "pv_chunk", "{} does not divide key_block ({})", s.pv_chunk, s.key_block);
  return std::nullopt;
}

std::optional<ScheduleError> check_x86(const Schedule& s, const AttentionSpec& spec,
                                       const Halide::Target& target) {
  ATTNFORGE_REQUIRE(s.vector_width <= native_vector_width(target), "vector_width",
                    "{} lanes need {}; target '{}' has {} f32 lanes", s.vector_width,
                    s.vector_width == 16 ? "AVX-512" : "AVX", target.to_string(),
                    native_vector_width(target));
  if (s.form == Form::materialized) return std::nullopt;
  return check_tiles(s, spec, target);
}

#undef ATTNFORGE_REQUIRE

}  // namespace

TargetKind kind_of(const Halide::Target& target) {
  return target.has_gpu_feature() ? TargetKind::gpu : TargetKind::cpu;
}

std::optional<ScheduleError> check_spec_on_target(const AttentionSpec& spec,
                                                  const Halide::Target& target) {
  if (spec.bias_grad) {
    return ScheduleError("bias_grad",
                         "forward kernels write no dBias; .dbias is a backward "
                         "kernel's spec");
  }
  // Halide 21's PTX backend aborts on bf16 loads: bf16 goes to the
  // tensor-core form, whose words are integers; OpenCL has no such form.
  if (kind_of(target) == TargetKind::gpu && spec.dtype == DType::bf16 &&
      !target.has_feature(Halide::Target::CUDA)) {
    return ScheduleError("dtype",
                         "bf16 storage on a GPU needs CUDA's tensor-core form online_mma; '" +
                             target.to_string() + "' has no CUDA");
  }
  if (kind_of(target) == TargetKind::gpu && spec.paged()) {
    return ScheduleError("page_size", "a paged KV cache has CPU kernels only");
  }
  if (kind_of(target) == TargetKind::gpu && spec.quantized_kv()) {
    return ScheduleError("kv_storage", "an 8-bit KV cache (kv8, kvfp8) has CPU kernels only");
  }
  return std::nullopt;
}

std::optional<ScheduleError> check_unset(const Schedule& s, KnobScope scope) {
  for (const KnobRow& row : knob_table()) {
    if (row.scope() == scope && row.get(s) != row.unset()) {
      return ScheduleError(row.name(), scope == KnobScope::layer
                                           ? "only a layer's schedule has projection knobs"
                                           : "only a CUDA schedule has GPU knobs");
    }
  }
  return std::nullopt;
}

std::optional<ScheduleError> check_legal_values(const Schedule& s, TargetKind kind,
                                                std::initializer_list<KnobScope> scopes) {
  for (const KnobRow& row : knob_table()) {
    if (std::find(scopes.begin(), scopes.end(), row.scope()) == scopes.end() ||
        row.ignored(kind, s.form)) {
      continue;
    }
    const int value = row.get(s);
    const KnobOnTarget& on = row.on(kind);
    if (on.legal) {
      if (!on.legal->contains(value)) return ScheduleError(row.name(), on.legal->describe(value));
    } else if (row.encoding() == KnobEncoding::name &&
               std::find(on.searched.begin(), on.searched.end(), value) == on.searched.end()) {
      // An enum takes the values its target searches.
      std::vector<std::string> expected;
      for (int code : on.searched) expected.push_back(row.describe(code));
      return ScheduleError(row.name(),
                           fmt::format("{} has no {} schedule; expected {}", row.describe(value),
                                       processor_name(kind), fmt::join(expected, " or ")));
    }
  }
  return std::nullopt;
}

// Target strings may name only the newest feature (e.g. avx2, avx512_zen4).
bool has_bf16_dots(const Halide::Target& target) {
  using T = Halide::Target;
  return target.features_any_of({T::AVX512_SapphireRapids, T::AVX512_Zen4, T::AVX512_Zen5});
}

bool has_native_bf16_rounding(const Halide::Target& target) {
  return target.arch == Halide::Target::X86 && target.has_feature(Halide::Target::AVX512) &&
         has_bf16_dots(target);
}

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
  const TargetKind kind = kind_of(target);
  if (auto misfit = check_unset(s, KnobScope::layer)) return misfit;
  if (kind == TargetKind::cpu) {
    if (auto misfit = check_unset(s, KnobScope::gpu)) return misfit;
  }
  if (auto misfit = check_target(s, target)) return misfit;
  if (auto misfit = check_spec_on_target(spec, target)) return misfit;
  const KnobScope own = kind == TargetKind::gpu ? KnobScope::gpu : KnobScope::cpu;
  if (auto misfit = check_legal_values(s, kind, {KnobScope::attention, own})) return misfit;
  if (auto misfit = check_shared(s, spec)) return misfit;
  return kind == TargetKind::gpu ? check_cuda(s, spec, target) : check_x86(s, spec, target);
}

void validate(const Schedule& s, const AttentionSpec& spec, const Halide::Target& target) {
  spec.validate();
  if (auto misfit = check(s, spec, target)) throw *misfit;
}

}  // namespace attnforge::schedules
