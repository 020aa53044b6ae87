// GPU calls through the runtime allocate an unfused kernel's intermediates on
// the first call only: Halide 21's runtime keeps freed device allocations for
// reuse by default (its header still says the default is off), which the
// GPU timings rely on. It runs with a stand-in driver (one device, runs
// nothing) that counts device allocations; the tensors are device addresses
// that nothing reads.
#include <gtest/gtest.h>

#include "tests/runtime/stand_in_cuda.h"

namespace attnforge {
namespace {

int device_allocations() {
  return stand_in_driver_record("stand_in_device_allocations");
}

TEST(CudaDeviceMemory, ASecondCallAllocatesNoDeviceMemory) {
  // Returning the weights takes the unfused kernel, whose scores live in
  // device memory between its stages.
  TensorView q = on_device(0x10000000, {1, 2, 20, 32});
  TensorView k = on_device(0x20000000, {1, 2, 20, 32});
  TensorView v = on_device(0x30000000, {1, 2, 20, 32});
  TensorView out = on_device(0x40000000, {1, 2, 20, 32});
  TensorView weights = on_device(0x50000000, {1, 2, 20, 20});
  AttentionOptions options;
  options.weights = &weights;
  KernelChoice choice;
  ASSERT_TRUE(choose_kernel(q, k, v, out, options, &choice).ok());

  Status first = attention(q, k, v, out, options);
  ASSERT_TRUE(first.ok()) << first.message;
  const int after_first = device_allocations();
  ASSERT_GT(after_first, 0) << choice.function << " allocated no device memory";
  for (int call = 0; call < 3; ++call) {
    Status again = attention(q, k, v, out, options);
    ASSERT_TRUE(again.ok()) << again.message;
  }
  EXPECT_EQ(device_allocations(), after_first) << choice.function;
}

}  // namespace
}  // namespace attnforge
