// Every CUDA module loads through the runtime's replacement of Halide's
// compile_kernel: a stand-in driver of one device records the PTX and the
// register limit of the load. The tensor-core GEMM's mma calls arrive linked.
#include <HalideBuffer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnforge_mma_gemm_2x4_w1x1.h"
#include "prototypes/mma_gemm/mma_gemm_view.h"
#include "runtime/src/cuda_driver.h"
#include "spec/cuda_register_limit.h"
#include "tests/runtime/stand_in_cuda.h"

namespace attnforge {
namespace {

using Halide::Runtime::Buffer;

const char* loaded_image() {
  void* driver = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) return nullptr;
  auto image = reinterpret_cast<const char* (*)()>(dlsym(driver, "stand_in_module_image"));
  return image ? image() : nullptr;
}

TEST(CudaModuleLoad, TheMmaGemmLoadsWithItsPtxFunctionsLinked) {
  // As every call through the runtime does, this links the runtime's
  // driver lookup and module load in place of the Halide runtime's.
  ASSERT_TRUE(runtime::cuda_device_available(nullptr));
  constexpr int M = 64, N = 64, K = 32;
  Buffer<uint32_t, 2> a(K / 2, M), b(K / 2, N);
  a.fill(0);
  b.fill(0);
  std::vector<float> c_storage(M * N, -1.f);
  Buffer<float, 8> c(c_storage.data(), 8, mma_gemm_c_dims(M, N, 2, 4).data());
  ASSERT_EQ(attnforge_mma_gemm_2x4_w1x1(a, b, c), 0);
  const char* image = loaded_image();
  ASSERT_NE(image, nullptr) << "the stand-in driver is not loaded";
  const std::string ptx = image;
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos);
  EXPECT_EQ(ptx.find("call.uni"), std::string::npos);
  EXPECT_EQ(ptx.find(".extern .func"), std::string::npos);
  EXPECT_EQ(stand_in_driver_record("stand_in_module_register_limit"), kCudaRegisterLimit);
}

// The benchmark's cache-resident run: every row of A and column of B the
// first, read at a stride of 0. The call passes the GEMM's checks, and the
// device holds one row of each operand.
TEST(CudaModuleLoad, TheMmaGemmTakesOperandsReadAtAStrideOfZero) {
  ASSERT_TRUE(runtime::cuda_device_available(nullptr));
  constexpr int M = 64, N = 64, K = 64;
  std::vector<uint32_t> a_row(K / 2, 0), b_column(K / 2, 0);
  const halide_dimension_t a_dims[] = {{0, K / 2, 1}, {0, M, 0}},
                           b_dims[] = {{0, K / 2, 1}, {0, N, 0}};
  Buffer<uint32_t, 2> a(a_row.data(), 2, a_dims), b(b_column.data(), 2, b_dims);
  a.set_host_dirty();
  b.set_host_dirty();
  std::vector<float> c_storage(M * N, -1.f);
  Buffer<float, 8> c(c_storage.data(), 8, mma_gemm_c_dims(M, N, 2, 4).data());
  const int bytes_before = stand_in_driver_record("stand_in_device_allocated_bytes");
  ASSERT_EQ(attnforge_mma_gemm_2x4_w1x1(a, b, c), 0);
  EXPECT_EQ(stand_in_driver_record("stand_in_device_allocated_bytes") - bytes_before,
            2 * K / 2 * 4 + M * N * 4);
}

}  // namespace
}  // namespace attnforge
