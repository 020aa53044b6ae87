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

}  // namespace
}  // namespace attnforge
