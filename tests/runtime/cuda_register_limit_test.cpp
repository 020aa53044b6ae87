// CUDA kernels run through the runtime load with the register limit the
// screens assemble them under (spec/cuda_register_limit.h), whatever the
// environment said before: a stand-in driver of one device records the
// CU_JIT_MAX_REGISTERS option Halide's runtime passes when it loads a module.
#include "spec/cuda_register_limit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/runtime/stand_in_cuda.h"

namespace attnforge {
namespace {

TEST(CudaRegisterLimit, KernelsLoadWithTheLimitTheScreensAssembleUnder) {
  // Halide's own default is 64; a value set before attnforge runs is replaced.
  setenv(kCudaRegisterLimitVariable, "64", 1);
  // A spec the test package ships for CUDA; the tensors are device
  // addresses that nothing reads.
  TensorView q = on_device(0x10000000, {1, 2, 20, 32}), k = on_device(0x20000000, {1, 2, 20, 32});
  TensorView v = on_device(0x30000000, {1, 2, 20, 32}), out = on_device(0x40000000, {1, 2, 20, 32});
  TensorView weights = on_device(0x50000000, {1, 2, 20, 20});
  AttentionOptions options;
  options.weights = &weights;
  Status status = attention(q, k, v, out, options);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(stand_in_driver_record("stand_in_module_register_limit"), kCudaRegisterLimit);
  EXPECT_STREQ(std::getenv(kCudaRegisterLimitVariable), std::to_string(kCudaRegisterLimit).c_str());
}

}  // namespace
}  // namespace attnforge
