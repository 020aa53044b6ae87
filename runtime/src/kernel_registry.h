// The linked package's kernels, indexed by spec, and the choice of one for a
// call: same spec, a device and CPU that can run it, then the kernel tuned for
// the call's shape bucket, else the generic one, else the nearest bucket;
// between targets, the higher rank (wider vectors) wins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnforge/kernel_table.h"
#include "call_validation.h"

namespace attnforge::runtime {

struct RegisteredKernel {
  const KernelEntry* entry;
  AttentionSpec spec;
};

// Parsed once from attnforge_kernel_package.
const std::vector<RegisteredKernel>& registered_kernels();

// nullptr when none fits; `status` then says why, listing what exists.
// cuda_missing: why CUDA kernels cannot run here, empty when they can.
const KernelEntry* choose(const ValidatedCall& call, uint32_t cpu_features,
                          const std::string& cuda_missing, Status* status);

}  // namespace attnforge::runtime
