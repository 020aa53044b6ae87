// Which CUDA kernel a call gets, with the stand-in driver of one device: a
// kernel that loads Q, K and V rows as 16-byte vectors (online_rows) serves
// only calls whose rows are aligned so; any other call gets a kernel without
// that need (the package's generic one).
#include <gtest/gtest.h>

#include "tests/runtime/stand_in_cuda.h"

namespace attnforge {
namespace {

Status choose_causal_gqa(uintptr_t q_offset, int64_t kv_row_stride, KernelChoice* choice) {
  TensorView q = on_device(0x10000000 + q_offset, {1, 8, 64, 64});
  TensorView kv = TensorView::strided(
      reinterpret_cast<void*>(0x20000000), ElementType::f32, {1, 2, 64, 64},
      {2 * 64 * kv_row_stride, 64 * kv_row_stride, kv_row_stride, 1}, Device::cuda);
  TensorView out = on_device(0x40000000, {1, 8, 64, 64});
  AttentionOptions options;
  options.mask = MaskKind::causal;
  return choose_kernel(q, kv, kv, out, options, choice);
}

TEST(CudaKernelChoice, VectorLoadingKernelsServeAlignedRowsOnly) {
  KernelChoice aligned, shifted, odd_stride;
  ASSERT_TRUE(choose_causal_gqa(0, 64, &aligned).ok());
  EXPECT_EQ(aligned.bucket, "b1.q64.k64") << aligned.function;  // the tuned online_rows kernel
  ASSERT_TRUE(choose_causal_gqa(4, 64, &shifted).ok());
  EXPECT_EQ(shifted.bucket, "generic") << shifted.function;
  ASSERT_TRUE(choose_causal_gqa(0, 66, &odd_stride).ok());
  EXPECT_EQ(odd_stride.bucket, "generic") << odd_stride.function;
}

// bf16 on CUDA: the tensor-core kernels, which need rows aligned to 16
// bytes; with no bf16 kernel for other rows, an unaligned call is an error
// that names the alignment.
Status choose_bf16_bias(uintptr_t q_offset, KernelChoice* choice) {
  auto bf16 = [](uintptr_t address, std::initializer_list<int64_t> shape) {
    return TensorView::contiguous(reinterpret_cast<void*>(address), ElementType::bf16, shape,
                                  Device::cuda);
  };
  TensorView q = bf16(0x10000000 + q_offset, {1, 4, 64, 32});
  TensorView kv = bf16(0x20000000, {1, 1, 64, 32});
  TensorView bias = bf16(0x30000000, {1, 4, 64, 64});
  TensorView out = bf16(0x40000000, {1, 4, 64, 32});
  AttentionOptions options;
  options.bias = &bias;
  return choose_kernel(q, kv, kv, out, options, choice);
}

TEST(CudaKernelChoice, Bf16TakesTheTensorCoreKernelsWithAlignedRows) {
  KernelChoice aligned, shifted;
  ASSERT_TRUE(choose_bf16_bias(0, &aligned).ok());
  EXPECT_EQ(aligned.bucket, "generic") << aligned.function;
  EXPECT_EQ(aligned.spec, "full.bias.mqa4.d32.bf16");
  const Status status = choose_bf16_bias(2, &shifted);
  EXPECT_EQ(status.code, ErrorCode::no_kernel);
  EXPECT_NE(status.message.find("aligned to 16 bytes"), std::string::npos) << status.message;
}

}  // namespace
}  // namespace attnforge
