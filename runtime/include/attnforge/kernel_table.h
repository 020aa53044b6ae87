// The interface between the runtime and an emitted kernel package: the
// package's generated kernel table defines attnforge_kernel_package.
#pragma once

#include <cstdint>

struct halide_buffer_t;

namespace attnforge {

// CPU features a kernel's instructions need, as bits.
enum CpuFeature : uint32_t {
  kSse41 = 1u << 0,
  kAvx = 1u << 1,
  kAvx2 = 1u << 2,
  kFma = 1u << 3,
  kF16c = 1u << 4,
  kAvx512f = 1u << 5,
  kAvx512bw = 1u << 6,
  kAvx512dq = 1u << 7,
  kAvx512vl = 1u << 8,
  kAvx512cd = 1u << 9,
  kAvx512ifma = 1u << 10,
  kAvx512vbmi = 1u << 11,
  kAvx512bf16 = 1u << 12,
};

struct KernelEntry {
  const char* function;      // entry point name
  const char* spec;          // canonical attention spec
  const char* target;        // Halide target
  int (*argv)(void** args);  // the kernel's *_argv entry point
  uint32_t cpu_features;     // CpuFeature bits the host must have
  int cuda;                  // 1: runs on a CUDA device
  int bucket_batch;          // shape bucket it was tuned for (0, 0, 0: generic)
  int bucket_q_len;
  int bucket_kv_len;
  int rank;  // among kernels for the same call, higher wins
  // Bytes every row of Q, K and V must be aligned to: the pointers and the
  // B, H and L strides (1: any). A call that is not aligned gets another kernel.
  int input_alignment;
};

struct KernelPackage {
  const KernelEntry* entries;
  int count;
  // CUDA packages only: wrap / unwrap a device pointer in a halide_buffer_t.
  int (*cuda_wrap)(halide_buffer_t* buffer, uint64_t device_pointer);
  int (*cuda_detach)(halide_buffer_t* buffer);
};

}  // namespace attnforge

extern "C" const attnforge::KernelPackage attnforge_kernel_package;
