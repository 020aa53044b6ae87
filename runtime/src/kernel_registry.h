// The linked package's kernels, indexed by spec, and the choice of one for a
// call: same spec, a device and CPU that can run it, then the kernel tuned for
// the call's shape bucket, else the generic one, else the nearest bucket;
// between targets, the higher rank (wider vectors) wins. A window with no
// kernel of its own is served by one that takes the window per call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnforge/kernel_table.h"
#include "call_validation.h"
#include "layer_validation.h"

namespace attnforge::runtime {

struct RegisteredKernel {
  const KernelEntry* entry;
  AttentionSpec spec;
};

struct RegisteredLayer {
  const KernelEntry* entry;
  LayerSpec spec;
};

// Parsed once from attnforge_kernel_package: its attention kernels, their
// backward kernels, and its layer kernels (whose specs start with self. or cross.).
const std::vector<RegisteredKernel>& registered_kernels();
const std::vector<RegisteredKernel>& registered_backward_kernels();
const std::vector<RegisteredLayer>& registered_layers();

// nullptr when none fits; `status` then says why, listing what exists.
// cuda_missing: why CUDA kernels cannot run here, empty when they can.
// backward: among the backward kernels.
const RegisteredKernel* choose(const ValidatedCall& call, uint32_t cpu_features,
                               const std::string& cuda_missing, Status* status,
                               bool backward = false);

// The same choice among the layer kernels (CPU only).
const KernelEntry* choose_layer(const ValidatedLayerCall& call, uint32_t cpu_features,
                                Status* status);

}  // namespace attnforge::runtime
