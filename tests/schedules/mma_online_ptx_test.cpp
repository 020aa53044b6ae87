// The tensor-core form (online_mma) for CUDA without a GPU: the Generator
// lowered for sm_80, its PTX functions linked, assembled by ptxas for sm_80
// and sm_90. The key loop is mma and shuffles, with no call left and
// nothing in local memory.
#include <gtest/gtest.h>

#include "generators/cuda_launches.h"
#include "schedules/schedule.h"
#include "spec/attention_spec.h"
#include "spec/cuda_register_limit.h"
#include "tests/support/mma_schedule.h"
#include "tests/support/sass_listing.h"

namespace attnforge {
namespace {

using testing::assembled_sass;
using testing::count_lines;
using testing::has_assembler_tools;
using testing::hot_loop;
using testing::mma_schedule;

const Halide::Target kCuda80("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");

struct PtxCase {
  const char* spec;
  int query_tile, key_block, warps;
};

// Per key block (the loop's iteration), per 16-row tile: q.k is
// key_block / 8 score tiles x head_dim / 16 steps, P.V head_dim / 8 output
// tiles x key_block / 16 steps; the row max is two butterfly shuffles per
// row half.
TEST(MmaOnlinePtx, TheKeyLoopIsMmaAndShufflesWithNoCallOrLocalMemory) {
  if (!has_assembler_tools()) GTEST_SKIP() << "needs ptxas and nvdisasm";
  for (const PtxCase& c :
       {PtxCase{"causal.mha8.d64.f16", 16, 64, 4}, PtxCase{"full.gqa8x2.d128.bf16", 16, 32, 4}}) {
    const AttentionSpec spec = AttentionSpec::parse(c.spec);
    const std::string ptx =
        cuda_ptx(c.spec, mma_schedule(c.query_tile, c.key_block, c.warps), kCuda80);
    ASSERT_FALSE(ptx.empty()) << c.spec;
    const int tiles = c.query_tile / 16, d = spec.head_dim, kb = c.key_block;
    const int hmma = tiles * (kb / 8 * d / 16 + d / 8 * kb / 16);
    for (const char* arch : {"sm_80", "sm_90"}) {
      const std::optional<std::string> sass = assembled_sass(ptx, "mma_online", arch);
      ASSERT_TRUE(sass) << arch;
      const std::vector<std::string> loop = hot_loop(*sass, "HMMA");
      EXPECT_EQ(count_lines(loop, "HMMA.16816.F32"), hmma) << c.spec << " " << arch;
      EXPECT_EQ(count_lines(loop, "SHFL.BFLY"), 2 * 2 * tiles) << c.spec << " " << arch;
      EXPECT_EQ(testing::function_calls(loop), 0) << c.spec << " " << arch;
      EXPECT_EQ(count_lines(loop, "LDL") + count_lines(loop, "STL"), 0) << c.spec << " " << arch;
    }
  }
}

// Shapes near the most the check lets through, at head dims 64, 96 and 128
// (masks take registers the check does not count: the tuner screens spills):
// under the register limit with no spills, 32 threads per warp.

TEST(MmaOnlinePtx, FitsTheRegistersWithoutSpilling) {
  if (find_ptxas().empty()) GTEST_SKIP() << "needs ptxas";
  for (const PtxCase& c :
       {PtxCase{"full.mha8.d64.f16", 32, 64, 4}, PtxCase{"causal.kpad.gqa8x2.d128.bf16", 16, 64, 4},
        PtxCase{"window64_0.br.alibi.gqa8x2.d96.f16", 16, 32, 2}}) {
    const std::string schedule = mma_schedule(c.query_tile, c.key_block, c.warps);
    for (const CudaKernelResources& r : cuda_kernel_resources(c.spec, schedule, kCuda80, "sm_90")) {
      EXPECT_GT(r.registers, 0) << c.spec << " " << r.launch.kernel;
      EXPECT_LE(r.registers, kCudaRegisterLimit) << c.spec << " " << r.launch.kernel;
      EXPECT_EQ(r.spill_bytes, 0) << c.spec << " " << r.launch.kernel;
    }
    const std::vector<CudaKernelResources> kernels =
        cuda_kernel_resources(c.spec, schedule, kCuda80);
    ASSERT_EQ(kernels.size(), 2u) << c.spec;  // the V^T pre-pass and the attention
    EXPECT_EQ(kernels.back().launch.threads, 32 * c.warps) << c.spec;
  }
}

}  // namespace
}  // namespace attnforge
