#include "kernel_plan.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "schedules/backward_schedule.h"
#include "schedules/cuda_limits.h"
#include "schedules/layer_schedule.h"
#include "schedules/one_query_tiles.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "spec/backward_arguments.h"
#include "spec/layer_spec.h"
#include "spec/shape_bucket.h"

namespace attnforge::emit {

namespace {

using autotune::Record;
using autotune::RecordKind;
using schedules::Schedule;

// What a package can ship: schedules, not the competitors measured beside them.
const std::set<RecordKind> kShippedKinds = {RecordKind::preset, RecordKind::tuned};

std::string symbol(std::string text) {
  for (char& c : text) {
    if (c == '.') c = '_';
  }
  return text;
}

bool fits(const Schedule& schedule, const AttentionSpec& spec, const Halide::Target& target) {
  return !schedules::check(schedule, spec, target).has_value();
}

// As the layer Generator applies it: unset projection knobs at the target's defaults.
bool fits(const Schedule& schedule, const LayerSpec& layer, const Halide::Target& target) {
  return !schedules::check_layer(schedules::with_projection_defaults(schedule, target), layer,
                                 target)
              .has_value();
}

// The presets of each generic kernel, most preferred first: the first that
// fits a spec and target ships, else the naive schedule.
using Preference = std::vector<const char*>;
// Any query length.
const Preference kGenericPresets = {"online_mma_cuda",    "online_cuda",   "materialized_cuda",
                                    "online_bf16_avx512", "online_avx512", "online_avx2",
                                    "fused_avx512",       "fused_avx2",    "materialized_avx512",
                                    "materialized_avx2"};
// Up to 16 query rows: on a GPU key splits give the blocks work (where the
// head dim fits their threads, else the generic presets); on a CPU tiles of a
// few rows (a KV group's heads together) stream the K/V cache once (an int8
// cache's q.k in int16 dot products), else the unfused pipeline parallelizes
// over heads.
const Preference kShortQueryPresets = {
    "online_split_cuda",   "online_cuda",       "online_mma_cuda", "materialized_cuda",
    "decode_int16_avx512", "decode_int16_avx2", "decode_avx512",   "decode_avx2",
    "materialized_avx512", "materialized_avx2"};
// A whole MHA layer (CPUs only).
const Preference kLayerPresets = {"online_avx512", "online_avx2",         "fused_avx512",
                                  "fused_avx2",    "materialized_avx512", "materialized_avx2"};

// Whether a CUDA kernel under `preset` needs its rows aligned (cuda_limits.h).
bool needs_aligned_rows(const std::string& preset, const EmitTarget& target) {
  return target.cuda && preset != "naive" &&
         schedules::cuda_input_alignment(schedules::load_preset(preset)) > 1;
}

// The presets of `presets` whose kernels take rows at any alignment.
Preference unaligned_only(const Preference& presets, const EmitTarget& target) {
  Preference result;
  for (const char* name : presets) {
    if (!needs_aligned_rows(name, target)) result.push_back(name);
  }
  return result;
}

template <typename Spec>
std::string first_fitting(const Preference& presets, const Spec& spec, const EmitTarget& target) {
  for (const char* name : presets) {
    if (fits(schedules::load_preset(name), spec, target.target)) return name;
  }
  return "naive";
}

// A winner tuned on a machine like `target` (same GPU-ness) whose schedule
// fits it; Spec is an AttentionSpec or a LayerSpec.
template <typename Spec>
bool usable(const Record& r, const Spec& spec, const EmitTarget& target) {
  if (!Halide::Target::validate_target_string(r.target)) return false;
  if (Halide::Target(r.target).has_feature(Halide::Target::CUDA) != target.cuda) return false;
  try {
    return fits(Schedule::from_json(r.schedule), spec, target.target);
  } catch (const std::exception&) {
    return false;
  }
}

// A bucket names files: only well-formed ones.
bool names_a_bucket(const std::string& text) {
  try {
    parse_shape_bucket(text);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The tuned kernels of `text`: of the winners of compatible targets, the
// fastest per bucket, as copies of its generic kernel named `base` + bucket.
// A bucket with no measured winner takes the fastest estimate (a GPU tuned
// without one), which its origin names as such.
template <typename Spec>
std::vector<PlannedKernel> tuned_kernels(const autotune::Database& database,
                                         const std::string& text, const Spec& spec,
                                         const EmitTarget& target, const std::string& base,
                                         const PlannedKernel& generic) {
  auto ships = [&](const Record& r) {
    return r.spec == text && names_a_bucket(r.bucket) && usable(r, spec, target);
  };
  auto per_bucket = [](const std::vector<Record>& winners) {
    std::map<std::string, Record> fastest;
    for (const Record& r : winners) {
      auto it = fastest.find(r.bucket);
      if (it == fastest.end() || r.ms_median < it->second.ms_median) {
        fastest.insert_or_assign(r.bucket, r);
      }
    }
    return fastest;
  };
  std::map<std::string, Record> fastest = per_bucket(database.winners({"", kShippedKinds, ships}));
  fastest.merge(
      per_bucket(database.estimated_winners({"", kShippedKinds, ships})));  // keeps measured
  std::vector<PlannedKernel> kernels;
  for (const auto& [bucket, r] : fastest) {
    PlannedKernel k = generic;
    k.function = base + symbol(bucket);
    k.bucket = bucket;
    k.shape = parse_shape_bucket(bucket);
    k.schedule = schedules::canonical(Schedule::from_json(r.schedule)).to_json().dump();
    k.origin =
        r.estimate
            ? fmt::format("estimated: {:.3f} ms on {} by the GPU cost model, never run",
                          r.ms_median, r.target)
            : fmt::format("tuned: {:.3f} ms median on {} ({})", r.ms_median, r.target, r.strategy);
    kernels.push_back(k);
  }
  return kernels;
}

// The database's backward winners for `spec` that fit `target`: the fastest
// per bucket, of CPU targets.
std::map<std::string, autotune::Record> tuned_backward(const autotune::Database& database,
                                                       const AttentionSpec& spec,
                                                       const EmitTarget& target) {
  autotune::WinnerFilter filter{"", kShippedKinds, {}, true};
  filter.admits = [&](const autotune::Record& r) {
    if (r.spec != spec.to_string() || !names_a_bucket(r.bucket)) return false;
    if (!Halide::Target::validate_target_string(r.target) ||
        Halide::Target(r.target).has_gpu_feature()) {
      return false;
    }
    try {
      return !schedules::check_backward(schedules::BackwardSchedule::from_json(r.schedule), spec,
                                        target.target);
    } catch (const std::exception&) {
      return false;
    }
  };
  std::map<std::string, autotune::Record> fastest;
  for (const autotune::Record& r : database.winners(filter)) {
    auto it = fastest.find(r.bucket);
    if (it == fastest.end() || r.ms_median < it->second.ms_median) {
      fastest.insert_or_assign(r.bucket, r);
    }
  }
  return fastest;
}

// A spec's backward kernel on one target, under the first backward preset
// that fits: on a CPU the naive schedule where none does; on CUDA, where
// every kernel needs a GPU schedule, none is shipped and the reason is told.
void plan_backward(const autotune::Database& database, const AttentionSpec& spec, size_t t,
                   const EmitTarget& target, KernelPlan& result) {
  const std::string text = spec.to_string();
  std::string preset = target.cuda ? "" : "naive", gpu_misfit;
  for (const std::string& name : schedules::backward_preset_names()) {
    const schedules::BackwardSchedule schedule = schedules::load_backward_preset(name);
    const auto misfit = schedules::check_backward(schedule, spec, target.target);
    if (!misfit) {
      preset = name;
      break;
    }
    if (schedule.gpu && gpu_misfit.empty()) gpu_misfit = misfit->what();
  }
  if (preset.empty()) {
    result.skipped.push_back(text + " backward on " + target.tag + ": " + gpu_misfit);
    return;
  }
  PlannedKernel k{"attnforge_" + target.tag + "_" + symbol(text) + "_backward",
                  spec,
                  t,
                  "backward",
                  {0, 0, 0},
                  preset,
                  "backward preset " + preset};
  k.backward = true;
  result.kernels.push_back(k);
  for (const auto& [bucket, r] : tuned_backward(database, spec, target)) {
    PlannedKernel tuned = k;
    tuned.function = k.function + "_" + symbol(bucket);
    tuned.bucket = bucket;
    tuned.shape = parse_shape_bucket(bucket);
    tuned.schedule = r.schedule.dump();
    tuned.origin = fmt::format("tuned backward: {:.3f} ms median on {} ({})", r.ms_median, r.target,
                               r.strategy);
    result.kernels.push_back(std::move(tuned));
  }
}

// A layer's kernels on one target: the generic kernel, the first layer preset
// that fits, and the tuned ones.
void plan_layer(const autotune::Database& database, const LayerSpec& layer, size_t t,
                const EmitTarget& target, KernelPlan& result) {
  const std::string text = layer.to_string();
  if (target.cuda) {
    result.skipped.push_back(text + " on " + target.tag + ": layers have CPU kernels only");
    return;
  }
  const std::string preset = first_fitting(kLayerPresets, layer, target);
  const std::string base = "attnforge_" + target.tag + "_" + symbol(text) + "_";
  PlannedKernel generic{base + "generic", layer.attention,    t,    "generic", {0, 0, 0},
                        preset,           "preset " + preset, layer};
  result.kernels.push_back(generic);
  for (PlannedKernel& k : tuned_kernels(database, text, layer, target, base, generic)) {
    result.kernels.push_back(std::move(k));
  }
}

// The spec whose window is given per call, for a compiled window spec with
// no shipped record that every target can build; else nothing.
std::optional<AttentionSpec> run_time_window_instead(const AttentionSpec& spec,
                                                     const std::vector<Record>& shipped,
                                                     const std::vector<EmitTarget>& targets) {
  if (spec.mask != PositionMask::window || spec.run_time_window) return std::nullopt;
  const std::string text = spec.to_string();
  for (const Record& r : shipped) {
    if (r.spec == text) return std::nullopt;
  }
  AttentionSpec per_call = spec;
  per_call.run_time_window = true;
  per_call.window_left = per_call.window_right = 0;
  for (const EmitTarget& target : targets) {
    if (schedules::check_spec_on_target(per_call, target.target)) return std::nullopt;
  }
  return per_call;
}

}  // namespace

KernelPlan plan_kernels(const autotune::Database& database, const std::vector<EmitTarget>& targets,
                        const std::vector<AttentionSpec>& extra_specs,
                        const std::vector<LayerSpec>& extra_layers,
                        const std::vector<AttentionSpec>& backward_specs) {
  KernelPlan result;
  std::map<std::string, AttentionSpec> specs;  // by canonical string: sorted, unique
  std::map<std::string, LayerSpec> layers;
  std::map<std::string, AttentionSpec> backward;  // specs without .lse
  std::vector<AttentionSpec> forward_specs = extra_specs;
  for (AttentionSpec spec : backward_specs) {
    spec.return_lse = false;
    if (auto misfit = backward_misfit(spec)) throw *misfit;
    backward.emplace(spec.to_string(), spec);
    forward_specs.push_back(forward_spec_of(spec));
  }
  std::vector<Record> shipped = database.winners({"", kShippedKinds, {}});
  for (Record& r : database.estimated_winners({"", kShippedKinds, {}})) shipped.push_back(r);
  for (const AttentionSpec& spec : forward_specs) {
    if (auto per_call = run_time_window_instead(spec, shipped, targets)) {
      result.served_by_other.push_back(spec.to_string() + ": no tuned kernel; served by " +
                                       per_call->to_string() + ", the window given per call");
      specs.emplace(per_call->to_string(), *per_call);
    } else {
      specs.emplace(spec.to_string(), spec);
    }
  }
  for (const LayerSpec& layer : extra_layers) layers.emplace(layer.to_string(), layer);
  for (const Record& r : shipped) {
    if (specs.count(r.spec) || layers.count(r.spec)) continue;
    try {  // a spec this version cannot build is left out
      if (names_a_layer(r.spec)) {
        layers.emplace(r.spec, LayerSpec::parse(r.spec));
      } else {
        specs.emplace(r.spec, AttentionSpec::parse(r.spec));
      }
    } catch (const SpecError&) {
    }
  }

  std::vector<PlannedKernel>& plan = result.kernels;
  for (size_t t = 0; t < targets.size(); ++t) {
    const EmitTarget& target = targets[t];
    for (const auto& [text, spec] : specs) {
      if (spec.modified() && target.cuda) {
        result.skipped.push_back(text + " on " + target.tag +
                                 ": packages run modifiers on CPU targets only");
        continue;
      }
      if (auto misfit = schedules::check_spec_on_target(spec, target.target)) {
        result.skipped.push_back(text + " on " + target.tag + ": " + misfit->what());
        continue;
      }
      const std::string base = "attnforge_" + target.tag + "_" + symbol(text) + "_";
      const std::string preset = first_fitting(kGenericPresets, spec, target);
      const PlannedKernel generic{base + "generic",  spec, t, "generic", {0, 0, 0}, preset,
                                  "preset " + preset};
      plan.push_back(generic);
      // Where the generic kernel loads rows as vectors (the tensor-core form),
      // calls with unaligned rows take the first preset that needs no alignment.
      if (needs_aligned_rows(preset, target)) {
        const std::string unaligned =
            first_fitting(unaligned_only(kGenericPresets, target), spec, target);
        if (unaligned != "naive") {
          plan.push_back({base + "generic_unaligned",
                          spec,
                          t,
                          "generic.unaligned",
                          {0, 0, 0},
                          unaligned,
                          "preset " + unaligned + " (rows not aligned for " + preset + ")"});
        }
      }
      const std::string short_preset = first_fitting(kShortQueryPresets, spec, target);
      plan.push_back({base + "generic_q16",
                      spec,
                      t,
                      "generic.q16",
                      {0, 16, 0},
                      short_preset,
                      "preset " + short_preset});
      // Decoding's one row per head, where the short-query tiles hold more.
      auto one_query = short_preset == "naive"
                           ? std::nullopt
                           : schedules::one_query_tiles(schedules::load_preset(short_preset), spec,
                                                        target.target);
      if (one_query) {
        plan.push_back({base + "generic_q1",
                        spec,
                        t,
                        "generic.q1",
                        {0, 1, 0},
                        one_query->to_json().dump(),
                        fmt::format("preset {}, tiles of one query's {} rows", short_preset,
                                    one_query->query_tile)});
      }
      for (PlannedKernel& k : tuned_kernels(database, text, spec, target, base, generic)) {
        plan.push_back(std::move(k));
      }
    }
    for (const auto& [text, layer] : layers) plan_layer(database, layer, t, target, result);
    for (const auto& [text, spec] : backward) plan_backward(database, spec, t, target, result);
  }
  return result;
}

}  // namespace attnforge::emit
