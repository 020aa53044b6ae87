// The GPU kernels a CUDA schedule launches, found without a GPU: the
// Generator is lowered for the CUDA target and each launch read from the
// lowered statement (threads per block, shared memory per block).
#pragma once

#include <Halide.h>

#include <map>
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

// The PTX of every kernel of `spec` under `schedule` (empty without any), as
// it loads: with link_ptx_functions applied.
std::string cuda_ptx(const std::string& spec, const std::string& schedule,
                     const Halide::Target& target);

// The PTX Halide embeds in a compiled module (one text for all its kernels;
// empty without any), before link_ptx_functions.
std::string module_ptx(const Halide::Module& module);

// ptxas from /usr/local/cuda/bin or PATH; empty when there is none.
std::string find_ptxas();

// The launches in a lowered statement's text.
std::vector<CudaLaunch> parse_cuda_launches(const std::string& stmt);

// A kernel's launch and what ptxas reports for it.
struct CudaKernelResources {
  CudaLaunch launch;
  int registers = 0;
  int spill_bytes = 0;  // spill stores and loads
};

// ptxas's option for the register limit kernels run with
// (spec/cuda_register_limit.h): "-maxrregcount=255".
std::string ptxas_register_limit();

// The launches of `spec` under `schedule`, with the registers and spills
// ptxas (from the CUDA toolkit: on PATH or in /usr/local/cuda/bin) reports
// for `arch` under the register limit the kernels run with. Throws KernelError when it does not
// compile, or when ptxas is missing or rejects the PTX.
std::vector<CudaKernelResources> cuda_kernel_resources(const std::string& spec,
                                                       const std::string& schedule,
                                                       const Halide::Target& target,
                                                       const std::string& arch = "sm_80");

// ptxas -v output: kernel name -> (registers, spill bytes).
std::map<std::string, std::pair<int, int>> parse_ptxas_report(const std::string& report);

}  // namespace attnforge
