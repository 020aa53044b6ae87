// The offline GPU cost model (scripts/gpu-cost-model) as a CostEstimator for
// the gpu-model strategy: each batch of candidates is generated, assembled
// under the register limit the kernels run with and ranked in one call.
#pragma once

#include <string>

#include "strategies/strategy.h"

namespace attnforge::autotune {

// Estimates for `spec` at `bucket` on an H200. The estimator throws
// std::runtime_error when the model cannot run (no ptxas or nvdisasm, no
// Python with numpy), naming what is missing.
CostEstimator gpu_cost_estimator(const std::string& spec, const std::string& bucket);

}  // namespace attnforge::autotune
