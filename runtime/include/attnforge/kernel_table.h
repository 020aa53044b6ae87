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

// One tensor a kernel's modifier reads (docs/modifiers.md), as it declares it.
struct ModifierTensorEntry {
  const char* name;
  int type_code;  // halide_type_code_t: 0 int, 2 float
  int type_bits;
  int rank;
  // Innermost first: a size of the call (kModifierBatch ...), or a fixed size > 0.
  int extents[4];
};
enum ModifierExtentCode : int {
  kModifierBatch = -1,
  kModifierHeads = -2,
  kModifierQueries = -3,
  kModifierKeys = -4,
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
  // A spec with a modifier: the tensors it reads, in the kernel's order.
  const ModifierTensorEntry* modifier_tensors;
  int modifier_tensor_count;
  // A modifier with a mask rule: the *_argv entry point of the kernel that
  // computes its key ranges (kv_len, the modifier's tensors, the table), and
  // the table's head extent (1, or H where the rule reads the head).
  int (*key_ranges_argv)(void** args);
  int key_range_heads;
  // 1: the backward pass of `spec` (dq, dk and dv; spec/backward_arguments.h's argv).
  int backward;
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
