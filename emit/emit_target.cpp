#include "emit_target.h"

#include <fmt/format.h>

#include <set>
#include <sstream>
#include <stdexcept>

#include "runtime/include/attnforge/kernel_table.h"
#include "schedules/space.h"

namespace attnforge::emit {

namespace {

using T = Halide::Target;

Halide::Target alias_target(const std::string& name) {
  if (name == "host") return Halide::get_host_target();
  if (name == "avx2") return T("x86-64-linux-avx-avx2-f16c-fma-sse41");
  if (name == "avx512") return T("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41");
  if (name == "cuda") return T("x86-64-linux-cuda-cuda_capability_80");
  if (!Halide::Target::validate_target_string(name)) {
    throw std::invalid_argument(fmt::format(
        "--targets: '{}' is neither host, avx2, avx512, cuda nor a Halide target string", name));
  }
  return T(name);
}

uint32_t cpu_features_of(const Halide::Target& t) {
  uint32_t bits = 0;
  if (t.has_feature(T::SSE41)) bits |= kSse41;
  if (t.has_feature(T::AVX)) bits |= kAvx;
  if (t.has_feature(T::AVX2)) bits |= kAvx | kAvx2;
  if (t.has_feature(T::FMA)) bits |= kFma;
  if (t.has_feature(T::F16C)) bits |= kF16c;
  if (t.features_any_of({T::AVX512, T::AVX512_KNL})) bits |= kAvx512f | kAvx512cd;
  if (t.features_any_of({T::AVX512_Skylake, T::AVX512_Cannonlake, T::AVX512_SapphireRapids,
                         T::AVX512_Zen4, T::AVX512_Zen5})) {
    bits |= kAvx512f | kAvx512cd | kAvx512bw | kAvx512dq | kAvx512vl;
  }
  if (t.features_any_of(
          {T::AVX512_Cannonlake, T::AVX512_SapphireRapids, T::AVX512_Zen4, T::AVX512_Zen5})) {
    bits |= kAvx512ifma | kAvx512vbmi;
  }
  if (t.features_any_of({T::AVX512_SapphireRapids, T::AVX512_Zen4, T::AVX512_Zen5})) {
    bits |= kAvx512bf16;
  }
  return bits;
}

std::string derived_tag(const Halide::Target& t) {
  if (t.has_feature(T::CUDA)) return fmt::format("cuda{}", t.get_cuda_capability_lower_bound());
  int width = schedules::native_vector_width(t);
  return width == 16 ? "avx512" : width == 8 ? "avx2" : "sse";
}

}  // namespace

std::vector<EmitTarget> parse_emit_targets(const std::string& list) {
  std::vector<EmitTarget> targets;
  std::set<std::string> tags;
  std::stringstream entries(list);
  std::string name;
  while (std::getline(entries, name, ',')) {
    if (name.empty()) continue;
    EmitTarget e;
    e.target = alias_target(name);
    if (e.target.arch != T::X86 || e.target.bits != 64 || e.target.os != T::Linux) {
      throw std::invalid_argument(
          fmt::format("--targets: '{}' is not x86-64 Linux, the only host emit supports", name));
    }
    e.cuda = e.target.has_feature(T::CUDA);
    e.tag = name == "host" ? "host" : derived_tag(e.target);
    e.cpu_features = e.cuda ? 0 : cpu_features_of(e.target);
    e.rank = e.cuda ? 0 : schedules::native_vector_width(e.target);
    if (!tags.insert(e.tag).second) {
      throw std::invalid_argument(
          fmt::format("--targets: two targets are both '{}'; give each ISA once", e.tag));
    }
    targets.push_back(e);
  }
  if (targets.empty()) throw std::invalid_argument("--targets: no target given");
  return targets;
}

Halide::Target runtime_target(const std::vector<EmitTarget>& targets) {
  Halide::Target base(T::Linux, T::X86, 64);
  for (const EmitTarget& e : targets) {
    if (!e.cuda) continue;
    base = base.with_feature(T::CUDA);
    for (T::Feature f : {T::CUDACapability30, T::CUDACapability32, T::CUDACapability35,
                         T::CUDACapability50, T::CUDACapability61, T::CUDACapability70,
                         T::CUDACapability75, T::CUDACapability80, T::CUDACapability86}) {
      if (e.target.has_feature(f)) base = base.with_feature(f);
    }
  }
  return base;
}

}  // namespace attnforge::emit
