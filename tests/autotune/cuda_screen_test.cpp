// The offline screen of CUDA candidates: a preset passes, a block of one warp
// whose shared memory leaves room for four blocks per SM (6% of the warps)
// does not. Skipped without ptxas.
#include "autotune/cuda_screen.h"

#include <gtest/gtest.h>

#include "generators/cuda_launches.h"
#include "generators/jit_compile.h"
#include "schedules/presets.h"
#include "spec/cuda_register_limit.h"

namespace attnforge::autotune {
namespace {

const Halide::Target kCuda("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");

bool have_ptxas() {
  try {
    cuda_kernel_resources("full.mha2.d32.f32", "online_cuda", kCuda);
    return true;
  } catch (const KernelError&) {
    return false;
  }
}

TEST(CudaScreen, PassesThePresetAndDiscardsALowOccupancyBlock) {
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas";
  const AttentionSpec spec = AttentionSpec::parse("full.mha8.d64.f32");
  EXPECT_EQ(cuda_screen(spec, "online_cuda", kCuda), std::nullopt);
  schedules::Schedule thin = schedules::load_preset("online_cuda");
  thin.gpu_threads_x = 4;
  thin.gpu_threads_y = 8;  // 32 threads
  thin.query_tile = 16;
  thin.key_block = 32;  // 4 x 16 x 64 state and Q + 2 x 16 x 32 + staging: about 37 KiB
  const auto why = cuda_screen(spec, thin.to_json().dump(), kCuda);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("occupancy"), std::string::npos) << *why;
}

// The screen assembles under the limit every process loads its kernels with,
// not ptxas's default of no limit: a one-warp block at D64 needs more
// registers than Halide's default cap of 64 and fits under the screened one.
TEST(CudaScreen, AssemblesUnderTheRegisterLimitKernelsRunWith) {
  EXPECT_EQ(ptxas_register_limit(), "-maxrregcount=" + std::to_string(kCudaRegisterLimit));
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas";
  for (const CudaKernelResources& k :
       cuda_kernel_resources("full.mha8.d64.f32", "online_warp_cuda", kCuda)) {
    EXPECT_LE(k.registers, kCudaRegisterLimit) << k.launch.kernel;
    EXPECT_EQ(k.spill_bytes, 0) << k.launch.kernel;
  }
}

}  // namespace
}  // namespace attnforge::autotune
