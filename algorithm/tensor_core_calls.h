// Tensor-core mma from Halide 21 expressions: pure extern calls that
// link_ptx_functions (kernel_support/ptx_functions.h) turns into mma.sync in the PTX.
// For CUDA kernels whose blocks are one warp, each lane passing its own
// fragments.
#pragma once

#include <Halide.h>

#include <array>

namespace attnforge {

enum class MmaInput { f16, bf16 };

// D = A x B + C for one m16n8k16 tile (.row.col), f32 accumulation. `a`:
// the lane's four 32-bit words of A (pairs of f16 or bf16), `b`: its two
// words of B, `c`: its four f32 accumulators. Returns its four results.
// Accumulators must not be a Tuple updated in place: Halide 21 stores its
// elements one by one, so the later calls would read replaced values
// (mma_gemm_generator.cpp alternates two slots instead).
std::array<Halide::Expr, 4> mma_m16n8k16(MmaInput input, const std::array<Halide::Expr, 4>& a,
                                         const std::array<Halide::Expr, 2>& b,
                                         const std::array<Halide::Expr, 4>& c);

// The same D on a target without CUDA, for testing a kernel's indexing on
// the CPU: each result is summed from the words of the lanes that hold its
// row of A and column of B, as mma.m16n8k16 lays them out. `a` and `b` are
// the lane's words as expressions of `lane`, which are evaluated again with
// each other lane in its place.
std::array<Halide::Expr, 4> emulated_mma_m16n8k16(MmaInput input, const Halide::Var& lane,
                                                  const std::array<Halide::Expr, 4>& a,
                                                  const std::array<Halide::Expr, 2>& b,
                                                  const std::array<Halide::Expr, 4>& c);

// The max or sum of an f32 over the 4 lanes of the caller's mma group
// (lanes 4g to 4g + 3, which hold one row of an m16n8k16 result): the
// softmax's row max and row sum. Every lane of the group gets the same value.
Halide::Expr lane_group_max(const Halide::Expr& value);
Halide::Expr lane_group_sum(const Halide::Expr& value);

// The same on a target without CUDA: `value` is an expression of `lane`,
// evaluated again with each lane of the group in its place, and combined in
// the order the shuffles combine it.
Halide::Expr emulated_lane_group_max(const Halide::Var& lane, const Halide::Expr& value);
Halide::Expr emulated_lane_group_sum(const Halide::Var& lane, const Halide::Expr& value);

}  // namespace attnforge
