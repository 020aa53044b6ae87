// The GPU kernels a CUDA schedule launches, found without a GPU: the
// Generator is lowered for the CUDA target and each launch read from the
// lowered statement (threads per block, shared memory per block).
#pragma once

#include <Halide.h>

#include <optional>
#include <string>
#include <vector>

namespace attnforge {

struct CudaLaunch {
  std::string kernel;
  int threads = 0;                  // per block
  std::optional<int> shared_bytes;  // per block; empty when sized at run time
};

// Lowers attention Generator `spec` with `schedule` for `target` (a CUDA
// target). Throws KernelError when it does not compile.
std::vector<CudaLaunch> cuda_launches(const std::string& spec, const std::string& schedule,
                                      const Halide::Target& target);

// The launches in a lowered statement's text.
std::vector<CudaLaunch> parse_cuda_launches(const std::string& stmt);

}  // namespace attnforge
