// The targets `attnforge emit --targets` accepts: the aliases host, avx2,
// avx512 and cuda, or any Halide x86 target string; and what the runtime must
// know of each (CPU features to check, rank among targets, CUDA or not).
#pragma once

#include <Halide.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnforge::emit {

struct EmitTarget {
  std::string tag;  // short name used in function names: avx2, avx512, cuda80, host...
  Halide::Target target;
  uint32_t cpu_features = 0;  // attnforge::CpuFeature bits its host code needs
  int rank = 0;               // vector width: wider wins when the CPU has it
  bool cuda = false;
};

// "host,avx2,avx512,cuda" or Halide target strings, comma-separated. Throws
// std::invalid_argument naming the entry that is neither, or a duplicate tag.
std::vector<EmitTarget> parse_emit_targets(const std::string& list);

// The one Halide runtime every kernel of `targets` links against: the common
// x86 base plus CUDA when any target uses it (runtime symbols are shared in a
// process, so a package carries exactly one).
Halide::Target runtime_target(const std::vector<EmitTarget>& targets);

}  // namespace attnforge::emit
