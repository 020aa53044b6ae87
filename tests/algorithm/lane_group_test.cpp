// The softmax's row max and row sum over the 4 lanes of an mma group: on
// the CPU through the emulation, and on the GPU as two butterfly shuffles
// that link_ptx_functions puts in place of each extern call.
#include <Halide.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>

#include "algorithm/tensor_core_calls.h"
#include "generators/cuda_launches.h"
#include "kernel_support/ptx_functions.h"
#include "spec/cuda_register_limit.h"

namespace attnforge {
namespace {

using namespace Halide;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LaneGroup, EmulationGivesEveryLaneItsOwnGroupsMaxAndSum) {
  const int warps = 2;
  Buffer<float> values(32 * warps);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-4.f, 4.f);
  for (int n = 0; n < values.width(); ++n) values(n) = uniform(rng);
  Var lane("lane"), warp("warp");
  const Expr value = values(lane + 32 * warp);
  Func reduced("reduced");
  reduced(lane, warp) =
      Tuple(emulated_lane_group_max(lane, value), emulated_lane_group_sum(lane, value));
  Realization result = reduced.realize({32, warps});
  Buffer<float> max = result[0], sum = result[1];
  for (int w = 0; w < warps; ++w) {
    for (int l = 0; l < 32; ++l) {
      const float* group = &values(32 * w + l / 4 * 4);
      EXPECT_EQ(max(l, w), std::max({group[0], group[1], group[2], group[3]})) << l << " " << w;
      EXPECT_EQ(sum(l, w), (group[0] + group[1]) + (group[2] + group[3])) << l << " " << w;
    }
  }
}

// One warp per block; each lane reduces a value of each input over its
// group. (Two inputs: ptxas shares a shuffle of one value between reductions.)
std::string lane_group_ptx() {
  ImageParam maxed(Float(32), 2, "maxed"), summed(Float(32), 2, "summed");  // (lane, block)
  Var lane("lane"), block("block");
  Func out("out");
  out(lane, block) = lane_group_max(maxed(lane, block)) + lane_group_sum(summed(lane, block));
  out.bound(lane, 0, 32).gpu_blocks(block).gpu_threads(lane);
  const Target target("host-cuda-cuda_capability_80");
  return module_ptx(Pipeline(out).compile_to_module({maxed, summed}, "lane_group", target));
}

TEST(LaneGroup, EachReductionIsTwoButterflyShufflesWithNoCallLeft) {
  const std::string ptx = lane_group_ptx();
  EXPECT_EQ(count(ptx, "call.uni (retval0), attnforge_lane_group_max_f32,"), 1);
  EXPECT_EQ(count(ptx, "call.uni (retval0), attnforge_lane_group_sum_f32,"), 1);
  const std::string linked = link_ptx_functions(ptx);
  EXPECT_EQ(count(linked, "call.uni"), 0) << linked;
  EXPECT_EQ(count(linked, ".extern .func"), 0) << linked;
  EXPECT_EQ(count(linked, "shfl.sync.bfly.b32 \t%afgs, %afgv, 1, 31, -1;"), 2) << linked;
  EXPECT_EQ(count(linked, "shfl.sync.bfly.b32 \t%afgs, %afgv, 2, 31, -1;"), 2) << linked;
  EXPECT_EQ(count(linked, "max.f32 \t%afgv, %afgv, %afgs;"), 2) << linked;
  EXPECT_EQ(count(linked, "add.f32 \t%afgv, %afgv, %afgs;"), 2) << linked;
}

// A call block as Halide's NVPTX back end writes it.
std::string call_block(const std::string& function, const std::vector<std::string>& arguments,
                       const std::string& result, int result_bits) {
  std::string block = "\t{ // callseq 0, 0\n";
  std::string params;
  for (size_t n = 0; n < arguments.size(); ++n) {
    block += "\t.param .b32 \tparam" + std::to_string(n) + ";\n\tst.param.b32 \t[param" +
             std::to_string(n) + "], " + arguments[n] + ";\n";
    params += (n ? ", param" : "param") + std::to_string(n);
  }
  const std::string bits = std::to_string(result_bits);
  block += "\t.param .b" + bits + " \tretval0;\n\tcall.uni (retval0), " + function + ", (" +
           params + ");\n\tld.param.b" + bits + " \t" + result + ", [retval0];\n\t} // callseq 0\n";
  return block;
}

// The two halves of one mma, with a reduction between them that writes `written`.
std::string mma_halves_around_a_reduction(const std::string& written) {
  std::vector<std::string> mma_arguments;
  for (int n = 1; n <= 10; ++n) mma_arguments.push_back("%r" + std::to_string(n));
  return call_block("attnforge_mma_f16_f32_lo", mma_arguments, "%rd1", 64) +
         call_block("attnforge_lane_group_max_f32", {"%r20"}, written, 32) +
         call_block("attnforge_mma_f16_f32_hi", mma_arguments, "%rd2", 64);
}

TEST(LaneGroup, AReductionBetweenMmaHalvesSplitsThemOnlyWhenItWritesAnArgument) {
  EXPECT_EQ(count(link_ptx_functions(mma_halves_around_a_reduction("%r30")), "mma.sync"), 1);
  EXPECT_EQ(count(link_ptx_functions(mma_halves_around_a_reduction("%r7")), "mma.sync"), 2);
}

TEST(LaneGroup, AMalformedCallNamesTheFunction) {
  try {
    link_ptx_functions(call_block("attnforge_lane_group_sum_f32", {"%r1", "%r2"}, "%r3", 32));
    ADD_FAILURE() << "a reduction with two arguments was linked";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("attnforge_lane_group_sum_f32"), std::string::npos)
        << error.what();
  }
}

TEST(LaneGroup, AssemblesToButterflyShufflesWithoutCalls) {
  if (find_ptxas().empty() || std::string(ATTNFORGE_NVDISASM).empty()) {
    GTEST_SKIP() << "needs ptxas and nvdisasm";
  }
  const std::string source = testing::TempDir() + "lane_group.ptx";
  std::ofstream(source) << link_ptx_functions(lane_group_ptx());
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::string cubin = testing::TempDir() + "lane_group_" + arch + ".cubin";
    const std::string assemble = find_ptxas() + " -arch=" + arch + " " + ptxas_register_limit() +
                                 " " + source + " -o " + cubin;
    ASSERT_EQ(std::system(assemble.c_str()), 0) << assemble;
    const std::string listing = testing::TempDir() + "lane_group_" + arch + ".sass";
    const std::string disassemble =
        std::string(ATTNFORGE_NVDISASM) + " -c " + cubin + " > " + listing;
    ASSERT_EQ(std::system(disassemble.c_str()), 0) << disassemble;
    std::ifstream file(listing);
    const std::string sass((std::istreambuf_iterator<char>(file)), {});
    EXPECT_EQ(count(sass, "SHFL.BFLY"), 4) << arch << "\n" << sass;
    EXPECT_EQ(count(sass, "CALL"), 0) << arch;
  }
}

}  // namespace
}  // namespace attnforge
