// Tensor-core mma and lane-group reductions from a Halide 21 CUDA kernel: the
// extern calls come out of Halide as PTX calls, link_ptx_functions puts one
// mma.sync in place of each pair (two shuffles in place of each reduction),
// and ptxas assembles it with no call left, for sm_80 and sm_90.
#include "algorithm/tensor_core_calls.h"

#include <Halide.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "generators/cuda_launches.h"
#include "kernel_support/ptx_functions.h"
#include "spec/cuda_register_limit.h"
#include "tests/support/sass_listing.h"

namespace attnforge {
namespace {

using namespace Halide;
using testing::assembled_sass;
using testing::count_lines;
using testing::has_assembler_tools;
using testing::hot_loop;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// One mma per one-warp block: D = A B + C, each lane passing its words of
// the A, B and C fragments (stored per lane, in the mma's layout) and
// writing its four results.
std::string mma_ptx(MmaInput input) {
  ImageParam a(UInt(32), 3, "a"), b(UInt(32), 3, "b"), c(Float(32), 3, "c");  // (word, lane, tile)
  Var word("word"), lane("lane"), tile("tile");
  const std::array<Expr, 4> d =
      mma_m16n8k16(input, {a(0, lane, tile), a(1, lane, tile), a(2, lane, tile), a(3, lane, tile)},
                   {b(0, lane, tile), b(1, lane, tile)},
                   {c(0, lane, tile), c(1, lane, tile), c(2, lane, tile), c(3, lane, tile)});
  Func out("out");
  out(word, lane, tile) = mux(word, {d[0], d[1], d[2], d[3]});
  out.bound(word, 0, 4).bound(lane, 0, 32).unroll(word).gpu_blocks(tile).gpu_threads(lane);
  const Target target("host-cuda-cuda_capability_80");
  return module_ptx(Pipeline(out).compile_to_module({a, b, c}, "mma", target));
}

// The same over k steps, accumulating in a Tuple update. Halide 21 stores a
// Tuple update's elements one after another, each value computed after the
// elements before it are stored: the second call of a pair then passes an
// accumulator the first has changed, and the pair is two mma.
std::string mma_loop_ptx(int k_steps) {
  ImageParam a(UInt(32), 3, "a"), b(UInt(32), 3, "b");  // (word, lane, step)
  Var lane("lane"), tile("tile"), word("word");
  RDom k(0, k_steps, "k");
  Func acc("acc");
  acc(lane, tile) = Tuple(0.f, 0.f, 0.f, 0.f);
  const Expr step = k + tile * k_steps;
  const std::array<Expr, 4> d = mma_m16n8k16(
      MmaInput::f16, {a(0, lane, step), a(1, lane, step), a(2, lane, step), a(3, lane, step)},
      {b(0, lane, step), b(1, lane, step)},
      {acc(lane, tile)[0], acc(lane, tile)[1], acc(lane, tile)[2], acc(lane, tile)[3]});
  acc(lane, tile) = Tuple(d[0], d[1], d[2], d[3]);
  Func out("out");
  out(word, lane, tile) =
      mux(word, {acc(lane, tile)[0], acc(lane, tile)[1], acc(lane, tile)[2], acc(lane, tile)[3]});
  out.bound(word, 0, 4).bound(lane, 0, 32).unroll(word).gpu_blocks(tile).gpu_threads(lane);
  acc.compute_at(out, lane);
  const Target target("host-cuda-cuda_capability_80");
  return module_ptx(Pipeline(out).compile_to_module({a, b}, "mma_loop", target));
}

// Runs `command`; returns its output, or nullopt when it fails.
TEST(TensorCoreCalls, HalideCallsAnExternFunctionPerHalf) {
  const std::string ptx = mma_ptx(MmaInput::f16);
  EXPECT_EQ(count(ptx, ".extern .func  (.param .b64 func_retval0) attnforge_mma_f16_f32_lo"), 1);
  EXPECT_EQ(count(ptx, ".extern .func  (.param .b64 func_retval0) attnforge_mma_f16_f32_hi"), 1);
  EXPECT_EQ(count(ptx, "call.uni (retval0), attnforge_mma_f16_f32_lo,"), 1);
  EXPECT_EQ(count(ptx, "call.uni (retval0), attnforge_mma_f16_f32_hi,"), 1);
}

TEST(TensorCoreCalls, CallsWithTheSameArgumentsBecomeOneMma) {
  for (MmaInput input : {MmaInput::f16, MmaInput::bf16}) {
    const std::string linked = link_ptx_functions(mma_ptx(input));
    EXPECT_EQ(count(linked, "call.uni"), 0);
    EXPECT_EQ(count(linked, ".extern .func"), 0);
    const std::string mma = input == MmaInput::f16 ? "m16n8k16.row.col.f32.f16.f16.f32"
                                                   : "m16n8k16.row.col.f32.bf16.bf16.f32";
    EXPECT_EQ(count(linked, mma), 1) << linked;
  }
}

TEST(TensorCoreCalls, ACallAfterAnArgumentChangesGetsItsOwnMma) {
  const std::string ptx = mma_loop_ptx(8);
  const int calls = count(ptx, "call.uni");
  ASSERT_GT(calls, 0);
  const std::string linked = link_ptx_functions(ptx);
  EXPECT_EQ(count(linked, "call.uni"), 0);
  // Each call of a step follows a store of the call before it into an
  // accumulator it passes, so none shares an mma.
  EXPECT_EQ(count(linked, "mma.sync"), calls) << linked;
}

// The GEMM prototype (prototypes/mma_gemm/mma_gemm_generator.cpp): mma tiles per
// warp and warps per block, each M x N.
struct MmaGemmShape {
  int tiles_m, tiles_n, warps_m = 1, warps_n = 1;
};

const Target kCuda80("host-cuda-cuda_capability_80");

Pipeline mma_gemm_pipeline(const MmaGemmShape& shape) {
  auto generator = Internal::GeneratorRegistry::create("mma_gemm", GeneratorContext(kCuda80));
  generator->set_generatorparam_value("warp_tiles_m", std::to_string(shape.tiles_m));
  generator->set_generatorparam_value("warp_tiles_n", std::to_string(shape.tiles_n));
  generator->set_generatorparam_value("warps_m", std::to_string(shape.warps_m));
  generator->set_generatorparam_value("warps_n", std::to_string(shape.warps_n));
  return generator->build_pipeline();
}

std::string mma_gemm_ptx(const MmaGemmShape& shape) {
  Pipeline pipeline = mma_gemm_pipeline(shape);
  return module_ptx(pipeline.compile_to_module(pipeline.infer_arguments(), "mma_gemm", kCuda80));
}

// Its hot loop is mma and loads: per iteration (two steps of k) one HMMA
// per tile and step; one 128-bit load per column of B and one 32-bit load
// per word of A (a fragment's words come from two rows, so wider loads of
// A would cost moves to put them in fragment order); no call or local
// memory. Whatever the warps per block.
TEST(TensorCoreCalls, TheGemmLoopIsOneHmmaPerTileAndStep) {
  if (!has_assembler_tools()) GTEST_SKIP() << "needs ptxas and nvdisasm";
  for (const MmaGemmShape& shape : {MmaGemmShape{2, 4}, MmaGemmShape{2, 4, 2, 2}}) {
    const std::string ptx = mma_gemm_ptx(shape);
    for (const char* arch : {"sm_80", "sm_90"}) {
      const std::optional<std::string> sass = assembled_sass(ptx, "mma_gemm", arch);
      ASSERT_TRUE(sass) << arch;
      const std::vector<std::string> loop = hot_loop(*sass);
      const int steps = 2, a_words_per_step = 2 * 2 * 2;  // 2 tiles, 2 rows, 2 words
      EXPECT_EQ(count_lines(loop, "HMMA.16816.F32"), steps * 2 * 4) << arch << "\n" << *sass;
      EXPECT_EQ(count_lines(loop, "LDG.E.128"), 4) << arch;
      EXPECT_EQ(count_lines(loop, "LDG"), 4 + steps * a_words_per_step) << arch;
      EXPECT_LE(count_lines(loop, "MOV"), 2) << arch;  // loop bookkeeping, no fragment moves
      EXPECT_EQ(count_lines(loop, "CALL"), 0) << arch;
      EXPECT_EQ(count_lines(loop, "LDL") + count_lines(loop, "STL"), 0) << arch;
    }
  }
}

// A block is its warps_m x warps_n warps, in one kernel.
TEST(TensorCoreCalls, TheGemmBlockIsItsWarps) {
  for (const MmaGemmShape& shape : {MmaGemmShape{2, 4}, MmaGemmShape{4, 4, 2, 2}}) {
    Pipeline pipeline = mma_gemm_pipeline(shape);
    const std::string path = ::testing::TempDir() + "mma_gemm.stmt";
    pipeline.compile_to_lowered_stmt(path, pipeline.infer_arguments(), Text, kCuda80);
    std::stringstream stmt;
    stmt << std::ifstream(path).rdbuf();
    const std::vector<CudaLaunch> launches = parse_cuda_launches(stmt.str());
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].threads, 32 * shape.warps_m * shape.warps_n);
  }
}

// Recorded: the prototype's PTX from Halide 21 (warp tiles 2 x 4, one warp),
// as the link step gets it: 32 calls, a lo and hi call per mma.
TEST(TensorCoreCalls, LinksTheRecordedGemmPtx) {
  std::ifstream file(ATTNFORGE_TEST_DATA "/mma_gemm_sm80.ptx");
  std::stringstream text;
  text << file.rdbuf();
  const std::string ptx = text.str();
  ASSERT_EQ(count(ptx, "call.uni"), 32);
  const std::string linked = link_ptx_functions(ptx);
  EXPECT_EQ(count(linked, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 16);
  EXPECT_EQ(count(linked, "call.uni"), 0);
  EXPECT_EQ(count(linked, ".extern"), 0);
  EXPECT_EQ(link_ptx_functions(ptx), linked);
}

// A call sequence as Halide's NVPTX back end writes it, arguments %r0 to %r9.
std::string call_block(int number, const std::string& function, const std::string& result) {
  std::string text = "\t{ // callseq " + std::to_string(number) + ", 0\n";
  for (int i = 0; i < 10; ++i) {
    text += "\t.param .b32 \tparam" + std::to_string(i) + ";\n\tst.param.b32 \t[param" +
            std::to_string(i) + "], %r" + std::to_string(i) + ";\n";
  }
  text += "\t.param .b64 \tretval0;\n\tcall.uni (retval0), " + function +
          ", (param0, param1, param2, param3, param4, param5, param6, param7, param8, param9);\n"
          "\tld.param.b64 \t" +
          result + ", [retval0];\n\t} // callseq " + std::to_string(number) + "\n";
  return text;
}

// Between the two calls of a pair: whatever may change an argument, or
// the path to the second, gives it an mma of its own.
TEST(TensorCoreCalls, APairSharesAnMmaOnlyWhenNothingBetweenCanChangeIt) {
  const std::string lo = call_block(0, "attnforge_mma_f16_f32_lo", "%rd1");
  const std::string hi = call_block(1, "attnforge_mma_f16_f32_hi", "%rd2");
  const std::string foreign_call =
      "\t{ // callseq 2, 0\n\t.param .b32 \tretval0;\n\tcall.uni (retval0), __nv_expf, ();\n"
      "\tld.param.b32 \t%r7, [retval0];\n\t} // callseq 2\n";
  const std::pair<std::string, int> cases[] = {
      {"", 1},
      {"\tadd.s32 \t%r20, %r7, 1;\n", 1},                       // reads an argument only
      {"\tcvt.u32.u64 \t%r7, %rd1;\n", 2},                      // writes one
      {"\t{ .reg .b32 tmp; mov.b64 {tmp, %r7}, %rd1; }\n", 2},  // in a nested scope
      {"\tmov.b64 \t{%r8, %r30}, %rd1;\n", 2},                  // in a register list
      {foreign_call, 2},                                        // another call's result
      {"$L__BB0_1:\n", 2},                                      // a label
      {"\t@%p1 bra \t$L__BB0_1;\n", 2},                         // a branch
  };
  for (const auto& [between, mmas] : cases) {
    const std::string linked = link_ptx_functions(lo + between + hi);
    EXPECT_EQ(count(linked, "mma.sync"), mmas) << between;
    EXPECT_EQ(count(linked, "call.uni attnforge"), 0);
  }
}

TEST(TensorCoreCalls, AMalformedCallNamesTheFunction) {
  const std::string ptx =
      "\t{ // callseq 0, 0\n\t.param .b32 \tparam0;\n\tst.param.b32 \t[param0], %r1;\n"
      "\t.param .b64 \tretval0;\n\tcall.uni (retval0), attnforge_mma_f16_f32_lo, (param0);\n"
      "\tld.param.b64 \t%rd1, [retval0];\n\t} // callseq 0\n";
  try {
    link_ptx_functions(ptx);
    ADD_FAILURE() << "a call with one argument was linked";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("attnforge_mma_f16_f32_lo"), std::string::npos);
  }
}

// ptxas assembles the linked PTX under the register limit kernels run with;
// nvdisasm (the toolkit's or the PyPI package's) shows HMMA and no CALL.
TEST(TensorCoreCalls, AssemblesToHmmaWithoutCalls) {
  if (!has_assembler_tools()) GTEST_SKIP() << "needs ptxas and nvdisasm";
  const std::string ptx = mma_loop_ptx(8);
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::optional<std::string> sass = assembled_sass(ptx, "mma_loop", arch);
    ASSERT_TRUE(sass) << arch;
    EXPECT_GT(count(*sass, "HMMA.16816.F32"), 0) << arch << "\n" << *sass;
    EXPECT_EQ(count(*sass, "CALL"), 0) << arch;
  }
}

// The softmax's row max and row sum over the 4 lanes of an mma group: on
// the CPU through the emulation, and on the GPU as two butterfly shuffles.
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

// ptxas makes two SHFL.BFLY of each reduction, with no call left.
TEST(LaneGroup, AssemblesToButterflyShufflesWithoutCalls) {
  if (!has_assembler_tools()) GTEST_SKIP() << "needs ptxas and nvdisasm";
  const std::string ptx = lane_group_ptx();
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::optional<std::string> sass = assembled_sass(ptx, "lane_group", arch);
    ASSERT_TRUE(sass) << arch;
    EXPECT_EQ(count(*sass, "SHFL.BFLY"), 4) << arch << "\n" << *sass;
    EXPECT_EQ(count(*sass, "CALL"), 0) << arch;
  }
}

}  // namespace
}  // namespace attnforge
