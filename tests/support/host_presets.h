// The x86 presets that fit this machine, for tests that run every form.
#pragma once

#include <Halide.h>

#include <string>

#include "schedules/space.h"

namespace attnforge::testing {

// The presets need x86 with at least AVX2.
inline bool host_has_presets() {
  Halide::Target host = Halide::get_host_target();
  return host.arch == Halide::Target::X86 && host.has_feature(Halide::Target::AVX2);
}

// The host's preset of a form: online, fused or materialized.
inline std::string preset_for(const std::string& form) {
  int width = schedules::native_vector_width(Halide::get_host_target());
  return form + (width == 16 ? "_avx512" : "_avx2");
}

}  // namespace attnforge::testing
