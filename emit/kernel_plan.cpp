#include "kernel_plan.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "schedules/presets.h"
#include "schedules/space.h"
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

// The first of `presets` that fits the spec and target, else the naive schedule.
std::string first_fitting(std::initializer_list<const char*> presets, const AttentionSpec& spec,
                          const EmitTarget& target) {
  for (const char* name : presets) {
    if (fits(schedules::load_preset(name), spec, target.target)) return name;
  }
  return "naive";
}

// A winner tuned on a machine like `target` (same GPU-ness) whose schedule fits it.
bool usable(const Record& r, const AttentionSpec& spec, const EmitTarget& target) {
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

}  // namespace

KernelPlan plan_kernels(const autotune::Database& database, const std::vector<EmitTarget>& targets,
                        const std::vector<AttentionSpec>& extra_specs) {
  KernelPlan result;
  std::map<std::string, AttentionSpec> specs;  // by canonical string: sorted, unique
  std::set<std::string> layers;
  for (const AttentionSpec& spec : extra_specs) specs.emplace(spec.to_string(), spec);
  for (const Record& r : database.winners({"", kShippedKinds, {}})) {
    if (specs.count(r.spec)) continue;
    try {
      specs.emplace(r.spec, AttentionSpec::parse(r.spec));
    } catch (const SpecError&) {  // a layer, or a spec this version cannot build
      if (names_a_layer(r.spec)) layers.insert(r.spec);
    }
  }
  for (const std::string& layer : layers) {
    result.skipped.push_back(layer +
                             ": layers are tuned and run through the JIT; emit ships "
                             "attention kernels");
  }

  std::vector<PlannedKernel>& plan = result.kernels;
  for (size_t t = 0; t < targets.size(); ++t) {
    const EmitTarget& target = targets[t];
    for (const auto& [text, spec] : specs) {
      if (auto misfit = schedules::check_spec_on_target(spec, target.target)) {
        result.skipped.push_back(text + " on " + target.tag + ": " + misfit->what());
        continue;
      }
      const std::string base = "attnforge_" + target.tag + "_" + symbol(text) + "_";
      const std::string preset =
          first_fitting({"online_cuda", "materialized_cuda", "online_avx512", "online_avx2",
                         "fused_avx512", "fused_avx2", "materialized_avx512", "materialized_avx2"},
                        spec, target);
      plan.push_back({base + "generic", spec, t, "generic", {0, 0, 0}, preset, "preset " + preset});
      // Short query lengths: on a GPU key splits give the blocks work; on a
      // CPU tiles of a few rows (a KV group's heads together) stream the
      // K/V cache once, else the unfused pipeline parallelizes over heads.
      const std::string short_preset =
          first_fitting({"online_split_cuda", "decode_avx512", "decode_avx2", "materialized_avx512",
                         "materialized_avx2"},
                        spec, target);
      plan.push_back({base + "generic_q16",
                      spec,
                      t,
                      "generic.q16",
                      {0, 16, 0},
                      short_preset,
                      "preset " + short_preset});
      // Of the winners of compatible targets, the fastest per bucket.
      std::map<std::string, Record> fastest;
      auto ships = [&text = text, &spec = spec, &target](const Record& r) {
        return r.spec == text && names_a_bucket(r.bucket) && usable(r, spec, target);
      };
      for (const Record& r : database.winners({"", kShippedKinds, ships})) {
        auto it = fastest.find(r.bucket);
        if (it == fastest.end() || r.ms_median < it->second.ms_median) {
          fastest.insert_or_assign(r.bucket, r);
        }
      }
      for (const auto& [bucket, r] : fastest) {
        plan.push_back(
            {base + symbol(bucket), spec, t, bucket, parse_shape_bucket(bucket),
             schedules::canonical(Schedule::from_json(r.schedule)).to_json().dump(),
             fmt::format("tuned: {:.3f} ms median on {} ({})", r.ms_median, r.target, r.strategy)});
      }
    }
  }
  return result;
}

}  // namespace attnforge::emit
