// Which (query, key) pairs a call of a spec with a mask rule attends: the
// spec's masks and its modifier's rule evaluated densely on the call's
// tensors. The benchmark counts FLOPs over them and hands them to the
// PyTorch peer as its mask.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge::bench {

// (key, query, head, batch) 1 where the pair is attended, else 0; one head
// where the rule reads none (key_range_heads), and it holds for every head.
Halide::Runtime::Buffer<uint8_t> attended_pairs_of(const AttentionSpec& spec,
                                                   const KernelArguments& args);

// The pairs attended over all heads.
double attended_pair_count(const AttentionSpec& spec,
                           const Halide::Runtime::Buffer<uint8_t>& attended);

}  // namespace attnforge::bench
