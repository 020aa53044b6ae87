#include "backward_schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "apply_cuda_backward.h"
#include "cuda_limits.h"
#include "schedule_check.h"

namespace attnforge::schedules {

namespace {

using S = BackwardSchedule;

// Accumulator registers a tile may take, of 16 (AVX2) or 32 (AVX-512).
int accumulator_budget(const Halide::Target& target) {
  return target.has_feature(Halide::Target::AVX512) ? 28 : 14;
}

// key_block, query_block, vector_width, score_vectors x score_rows, grad_vectors x grad_rows.
const S kAvx512 = {64, 64, 16, 2, 4, 2, 4};
const S kAvx2 = {64, 64, 8, 2, 4, 2, 2};
// bf16_dots last.
const S kBf16Avx512 = {64, 64, 16, 2, 4, 2, 4, 1};
// The GPU row form: blocks of 32 threads, whose K and V (Q and dO) rows fit
// the static shared memory up to head dim 128; the x86 tile knobs stay as they are.
const S kRowsGpu = {32, 32, 16, 2, 4, 2, 2, 0, 1};

}  // namespace

const std::vector<BackwardKnob>& backward_knobs() {
  static const std::vector<BackwardKnob> knobs = {
      {"key_block",
       &S::key_block,
       "Keys per block: the dK/dV pass's parallel tile, and the dQ pass's step over keys.",
       {32, 64, 128}},
      {"query_block",
       &S::query_block,
       "Queries per block: the dQ pass's parallel tile, and the dK/dV pass's step over queries.",
       {32, 64, 128}},
      {"vector_width", &S::vector_width, "f32 lanes per vector: 8 (AVX2) or 16 (AVX-512).", {}},
      {"score_vectors",
       &S::score_vectors,
       "Vectors per register tile of q.k and dO.v (along keys in the dK/dV pass, queries in the "
       "dQ pass).",
       {1, 2, 3}},
      {"score_rows", &S::score_rows, "Rows per register tile of q.k and dO.v.", {2, 3, 4, 6}},
      {"grad_vectors",
       &S::grad_vectors,
       "Head-dim vectors per register tile of dK, dV (summed together) and dQ.",
       {1, 2, 4}},
      {"grad_rows", &S::grad_rows, "Rows per register tile of dK, dV and dQ.", {1, 2, 4}},
      {"bf16_dots",
       &S::bf16_dots,
       "1: q.k and dO.v as bf16 dot products (vdpbf16ps), for bf16 specs on AVX512_BF16.",
       {0, 1}},
      {"gpu",
       &S::gpu,
       "1: the GPU row form (CUDA, OpenCL): a thread per key of a key_block in the dK/dV pass, "
       "per query of a query_block in the dQ pass; the other knobs are x86's and stay as "
       "the preset has them.",
       {}},
  };
  return knobs;
}

nlohmann::json BackwardSchedule::to_json() const {
  nlohmann::json json = nlohmann::json::object();
  for (const BackwardKnob& knob : backward_knobs()) {
    // x86 schedules keep the JSON they had before the GPU form.
    if (knob.field == &S::gpu && gpu == 0) continue;
    json[knob.name] = this->*knob.field;
  }
  return json;
}

BackwardSchedule BackwardSchedule::from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw ScheduleError("schedule", "a backward schedule is a JSON object");
  BackwardSchedule schedule;
  for (const auto& [key, value] : json.items()) {
    const BackwardKnob* knob = nullptr;
    for (const BackwardKnob& k : backward_knobs()) {
      if (key == k.name) knob = &k;
    }
    if (!knob) throw ScheduleError(key, "is not a knob of backward schedules");
    // Flags (bf16_dots, gpu) may be 0; sizes may not.
    const int least = knob->field == &S::bf16_dots || knob->field == &S::gpu ? 0 : 1;
    if (!value.is_number_integer() || value.get<int>() < least) {
      throw ScheduleError(
          key, fmt::format("must be an integer of at least {}, got {}", least, value.dump()));
    }
    schedule.*(knob->field) = value.get<int>();
  }
  return schedule;
}

std::vector<std::string> backward_preset_names() {
  return {"backward_bf16_avx512", "backward_avx512", "backward_avx2", "backward_rows_gpu"};
}

BackwardSchedule load_backward_preset(const std::string& name) {
  if (name == "backward_avx2") return kAvx2;
  if (name == "backward_avx512") return kAvx512;
  if (name == "backward_bf16_avx512") return kBf16Avx512;
  if (name == "backward_rows_gpu") return kRowsGpu;
  throw ScheduleError("preset", "'" + name +
                                    "' is unknown; backward presets: backward_avx2, "
                                    "backward_avx512, backward_bf16_avx512, backward_rows_gpu");
}

BackwardSchedule resolve_backward_schedule(const std::string& choice) {
  if (choice.empty() || choice.front() != '{') return load_backward_preset(choice);
  nlohmann::json json = nlohmann::json::parse(choice, nullptr, false);
  if (json.is_discarded()) throw ScheduleError("schedule", "is neither a preset nor JSON");
  return BackwardSchedule::from_json(json);
}

#define ATTNFORGE_REQUIRE(ok, field, ...) \
  if (!(ok)) return ScheduleError(field, fmt::format(__VA_ARGS__))

namespace {

// The GPU row form: a block of key_block (query_block) threads, one a row.
std::optional<ScheduleError> check_gpu_backward(const BackwardSchedule& s,
                                                const AttentionSpec& spec,
                                                const Halide::Target& target) {
  ATTNFORGE_REQUIRE(s.gpu == 1, "gpu", "'{}' is a GPU target; its schedules set gpu to 1",
                    target.to_string());
  ATTNFORGE_REQUIRE(
      target.has_feature(Halide::Target::CUDA) || target.has_feature(Halide::Target::OpenCL),
      "target", "'{}' is neither a CUDA nor an OpenCL target", target.to_string());
  ATTNFORGE_REQUIRE(s.bf16_dots == 0, "bf16_dots", "bf16 dot products are an x86 instruction");
  const int bias_rows_bytes = 2 * kBiasBlockKeys * spec.head_dim * 4;
  ATTNFORGE_REQUIRE(!spec.bias_grad || bias_rows_bytes <= kCudaMaxSharedBytes, "bias_grad",
                    "the dBias pass stages {} K and V rows of head dim {}: {} bytes of shared "
                    "memory, over {}",
                    kBiasBlockKeys, spec.head_dim, bias_rows_bytes, kCudaMaxSharedBytes);
  const BackwardSchedule preset = load_backward_preset("backward_rows_gpu");
  for (const BackwardKnob& knob : backward_knobs()) {
    const bool threads = knob.field == &S::key_block || knob.field == &S::query_block;
    if (threads) {
      const int value = s.*knob.field;
      ATTNFORGE_REQUIRE(value % 32 == 0 && value <= 256, knob.name,
                        "{} threads a block: a multiple of 32 up to 256, got {}", knob.name, value);
      // Each pass stages two rows of f32 per thread: K and V, or Q and dO.
      const int shared = 2 * value * spec.head_dim * 4;
      ATTNFORGE_REQUIRE(shared <= kCudaMaxSharedBytes, knob.name,
                        "{} rows of K and V (Q and dO) at head dim {} take {} bytes of shared "
                        "memory; a block has {}",
                        value, spec.head_dim, shared, kCudaMaxSharedBytes);
    } else if (knob.field != &S::gpu && knob.field != &S::bf16_dots) {
      ATTNFORGE_REQUIRE(s.*knob.field == preset.*knob.field, knob.name,
                        "is an x86 knob; the GPU row form takes the preset's {}",
                        preset.*knob.field);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ScheduleError> check_backward(const BackwardSchedule& s, const AttentionSpec& spec,
                                            const Halide::Target& target) {
  if (target.has_gpu_feature()) return check_gpu_backward(s, spec, target);
  ATTNFORGE_REQUIRE(target.arch == Halide::Target::X86, "target",
                    "'{}' is not an x86 CPU target; these schedules are for x86 CPUs",
                    target.to_string());
  ATTNFORGE_REQUIRE(s.gpu == 0, "gpu", "'{}' is a CPU target; the GPU row form needs a GPU",
                    target.to_string());
  const int lanes = s.vector_width;
  ATTNFORGE_REQUIRE(lanes == 8 || lanes == 16, "vector_width", "must be 8 or 16, got {}", lanes);
  ATTNFORGE_REQUIRE(lanes == 8 || target.has_feature(Halide::Target::AVX512), "vector_width",
                    "16 lanes need AVX-512; '{}' has 8", target.to_string());
  ATTNFORGE_REQUIRE(spec.head_dim % lanes == 0, "vector_width",
                    "head_dim {} is not a multiple of {} lanes", spec.head_dim, lanes);
  const int budget = accumulator_budget(target);
  ATTNFORGE_REQUIRE(s.score_vectors * s.score_rows <= budget, "score_rows",
                    "a {}x{} tile needs {} accumulators; the target keeps {}", s.score_vectors,
                    s.score_rows, s.score_vectors * s.score_rows, budget);
  // dK and dV are summed together: two accumulators per tile element.
  ATTNFORGE_REQUIRE(2 * s.grad_vectors * s.grad_rows <= budget, "grad_rows",
                    "a {}x{} dK and dV tile needs {} accumulators; the target keeps {}",
                    s.grad_vectors, s.grad_rows, 2 * s.grad_vectors * s.grad_rows, budget);
  ATTNFORGE_REQUIRE(s.bf16_dots == 0 || s.bf16_dots == 1, "bf16_dots", "must be 0 or 1, got {}",
                    s.bf16_dots);
  if (s.bf16_dots) {
    ATTNFORGE_REQUIRE(spec.dtype == DType::bf16, "bf16_dots", "needs bf16 storage, not {}",
                      to_string(spec.dtype));
    ATTNFORGE_REQUIRE(has_bf16_dots(target), "bf16_dots",
                      "'{}' has no bf16 dot products (AVX512_BF16)", target.to_string());
  }
  const int score_lanes = lanes * s.score_vectors;
  for (auto [name, block] : {std::pair{"key_block", s.key_block}, {"query_block", s.query_block}}) {
    ATTNFORGE_REQUIRE(block % score_lanes == 0, name,
                      "{} is not a multiple of score_vectors x vector_width ({})", block,
                      score_lanes);
    ATTNFORGE_REQUIRE(block % s.score_rows == 0 && block % s.grad_rows == 0, name,
                      "{} is not a multiple of score_rows ({}) and grad_rows ({})", block,
                      s.score_rows, s.grad_rows);
  }
  return std::nullopt;
}

int effective_grad_vectors(const BackwardSchedule& s, int head_dim) {
  int vectors = std::max(1, std::min(s.grad_vectors, head_dim / s.vector_width));
  while (vectors > 1 && head_dim % (vectors * s.vector_width) != 0) --vectors;
  return vectors;
}

void apply_naive_backward(const BackwardFuncs& f) {
  for (Halide::Func stage :
       {f.scores, f.probs, f.d_probs, f.out_dots, f.d_scores, f.dq_sum, f.key_sums,
        f.bias_terms.scores, f.bias_terms.d_probs, f.bias_terms.probs, f.bias_terms.d_logits}) {
    stage.compute_root();
  }
}

}  // namespace attnforge::schedules
