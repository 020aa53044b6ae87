// The x86 presets of a target's lanes, for tests that run every form.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "schedules/presets.h"
#include "schedules/schedule_check.h"
#include "schedules/space.h"
#include "tests/support/test_targets.h"

namespace attnforge::testing {

// The x86 presets need x86 with at least AVX2.
inline bool has_presets(const Halide::Target& target) {
  return target.arch == Halide::Target::X86 && target.has_feature(Halide::Target::AVX2);
}
inline bool kernel_target_has_presets() {
  return has_presets(kernel_target());
}

// The preset of a form (online, fused, materialized, decode) for the target's lanes.
inline std::string preset_for(const std::string& form, const Halide::Target& target) {
  return form + (schedules::native_vector_width(target) == 16 ? "_avx512" : "_avx2");
}
inline std::string preset_for(const std::string& form) {
  return preset_for(form, kernel_target());
}

// Every x86 form's preset that `spec` admits on the kernel target, the
// online form split over keys, and the naive schedule, as JSON or preset names.
inline std::vector<std::string> every_x86_form(const AttentionSpec& spec) {
  std::vector<std::string> all = {"naive"};
  const schedules::ScheduleSpace space(spec, kernel_target());
  for (const char* form : {"online", "fused", "materialized", "decode"}) {
    const std::string name = preset_for(form);
    if (space.contains(schedules::load_preset(name))) all.push_back(name);
  }
  schedules::Schedule split = schedules::load_preset(preset_for("online"));
  split.kv_splits = 4;
  split.parallel.push_back(schedules::ParallelLoop::kv_splits);
  all.push_back(split.to_json().dump());
  return all;
}

}  // namespace attnforge::testing
