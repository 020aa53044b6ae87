#include "cuda_screen.h"

#include <fmt/format.h>

#include "generators/cuda_launches.h"
#include "generators/jit_compile.h"
#include "schedules/cuda_limits.h"

namespace attnforge::autotune {

std::optional<std::string> cuda_screen(const AttentionSpec& spec, const std::string& schedule,
                                       const Halide::Target& target) {
  std::vector<CudaKernelResources> kernels;
  try {
    kernels = cuda_kernel_resources(spec.to_string(), schedule, target);
  } catch (const std::exception&) {  // no ptxas, a misfit or a compile error
    return std::nullopt;
  }
  for (const CudaKernelResources& k : kernels) {
    if (k.spill_bytes > 0) {
      return fmt::format("{} spills {} bytes (ptxas)", k.launch.kernel, k.spill_bytes);
    }
    const int shared = k.launch.shared_bytes.value_or(0);
    const double occupancy = schedules::cuda_occupancy(k.launch.threads, k.registers, shared);
    if (occupancy < kMinCudaOccupancy) {
      return fmt::format(
          "{}: estimated occupancy {:.0f}% ({} threads, {} registers, {} bytes shared) is below "
          "{:.0f}%",
          k.launch.kernel, 100 * occupancy, k.launch.threads, k.registers, shared,
          100 * kMinCudaOccupancy);
    }
  }
  return std::nullopt;
}

}  // namespace attnforge::autotune
