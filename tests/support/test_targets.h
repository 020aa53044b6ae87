// The x86 targets the tests compile for, so that every test holds on AVX2
// and AVX-512 hosts alike.
// - Tests that lower, compile or read assembly need no hardware: they take
//   both ISAs' explicit targets (lowering_targets()), whatever the host.
// - Tests that run kernels take kernel_target(): the host's, or the ISA that
//   ATTNFORGE_TEST_ISA names (avx2 or avx512). Where the host cannot run it
//   (avx512 on an AVX2 host), they compile their kernels and run none
//   (kernels_run_here()), which still checks every schedule fits and builds.
#pragma once

#include <Halide.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnforge::testing {

// AVX2 with FMA (Haswell, Zen 1-3): 8 f32 lanes.
inline Halide::Target avx2_target() {
  return Halide::Target("x86-64-linux-avx-avx2-f16c-fma-sse41");
}

// AVX-512 with bf16 dot products (Zen 4): 16 f32 lanes.
inline Halide::Target avx512_target() {
  return Halide::Target(
      "x86-64-linux-avx-avx2-avx512-avx512_cannonlake-avx512_skylake-avx512_zen4-f16c-fma-sse41");
}

// Every x86 ISA the presets are written for.
inline std::vector<Halide::Target> lowering_targets() {
  return {avx2_target(), avx512_target()};
}

// A lowering test once per ISA: TEST_P on a fixture derived from EachIsa,
// instantiated with INSTANTIATE_TEST_SUITE_P(Isa, Fixture, each_isa(), isa_name).
class EachIsa : public ::testing::TestWithParam<Halide::Target> {};
inline auto each_isa() {
  return ::testing::ValuesIn(lowering_targets());
}
inline std::string isa_name(const ::testing::TestParamInfo<Halide::Target>& info) {
  return info.param.has_feature(Halide::Target::AVX512) ? "avx512" : "avx2";
}

// The target of tests that run kernels: the host's unless ATTNFORGE_TEST_ISA
// names another. Throws std::invalid_argument on a name it does not know.
inline Halide::Target kernel_target() {
  const char* isa = std::getenv("ATTNFORGE_TEST_ISA");
  if (isa == nullptr || *isa == '\0') return Halide::get_host_target();
  const std::string name = isa;
  if (name == "avx2") return avx2_target();
  if (name == "avx512") return avx512_target();
  throw std::invalid_argument("ATTNFORGE_TEST_ISA is '" + name + "'; expected avx2 or avx512");
}

// Whether the host has every feature of kernel_target(), so its kernels run.
inline bool kernels_run_here() {
  const Halide::Target host = Halide::get_host_target();
  const Halide::Target target = kernel_target();
  return target.arch == host.arch && target.os == host.os &&
         (target.get_features_bitset() & ~host.get_features_bitset()).none();
}

}  // namespace attnforge::testing
