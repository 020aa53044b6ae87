// The x86 presets of a target's lanes, for tests that run every form.
#pragma once

#include <Halide.h>

#include <string>

#include "schedules/schedule_check.h"
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

}  // namespace attnforge::testing
