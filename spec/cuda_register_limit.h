// The register limit of every CUDA kernel attnforge screens and runs. Halide
// 21's CUDA runtime loads each module with the driver's JIT option
// CU_JIT_MAX_REGISTERS, 64 unless the environment variable
// HL_CUDA_JIT_MAX_REGISTERS says otherwise, read at every module load. The
// screens (ptxas in the tuner and scripts/ptx-check) assemble with this limit,
// and every process that runs a CUDA kernel (the runtime, the JIT, the tuner's
// measurements, the benchmarks) sets the variable to it before its first
// module loads, so a kernel runs as it was screened.
#pragma once

namespace attnforge {

// The hardware's most per thread on sm_80 and newer: no cap below it.
constexpr int kCudaRegisterLimit = 255;
constexpr const char* kCudaRegisterLimitVariable = "HL_CUDA_JIT_MAX_REGISTERS";

// Sets HL_CUDA_JIT_MAX_REGISTERS to kCudaRegisterLimit, replacing any other
// value, once per process; later calls do nothing. Call it before the first
// CUDA kernel of the process runs.
void use_screened_cuda_register_limit();

}  // namespace attnforge
