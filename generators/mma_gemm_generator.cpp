// A tensor-core GEMM, C = A B with f16 inputs and f32 accumulation, from
// Halide 21 through the mma calls of tensor_core_calls.h. Blocks are one warp;
// each computes warp_tiles_m x warp_tiles_n mma tiles (16 x 8 each) of C,
// every lane holding its fragments' words in registers, as mma.m16n8k16
// lays them out: lane = 4 * group + thread_in_group.
//
// A is M x K row-major and B is K x N column-major (B^T row-major), each
// element pair along K packed in one 32-bit word; C is M x N row-major.
// M must be a multiple of 16 * warp_tiles_m, N of 8 * warp_tiles_n, K of 16.
#include <Halide.h>

#include "generators/tensor_core_calls.h"

namespace attnforge {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::RVar;
using Halide::Var;

class MmaGemmGenerator : public Halide::Generator<MmaGemmGenerator> {
 public:
  GeneratorParam<int> warp_tiles_m{"warp_tiles_m", 2, 1, 8};
  GeneratorParam<int> warp_tiles_n{"warp_tiles_n", 4, 1, 16};

  Input<Buffer<uint32_t, 2>> a{"a"};  // (k pair, row of A)
  Input<Buffer<uint32_t, 2>> b{"b"};  // (k pair, column of B)
  // C as (e, t, ni, h, g, mi, wn, wm): element (row, column) =
  // ((wm * warp_tiles_m + mi) * 16 + 8h + g, (wn * warp_tiles_n + ni) * 8 + 2t + e).
  Output<Buffer<float, 8>> c{"c"};

  void generate() {
    const int tm = warp_tiles_m, tn = warp_tiles_n;
    const Expr k_steps = a.dim(0).extent() / 8;  // 16 elements, 8 pairs, per mma
    Var lane("lane"), mi("mi"), ni("ni"), wm("wm"), wn("wn"), parity("parity");
    RDom k(0, k_steps, "k");
    const Expr group = lane / 4, in_group = lane % 4;
    const Expr row = (wm * tm + mi) * 16 + group, column = (wn * tn + ni) * 8 + group;
    const Expr pair = k * 8 + in_group;

    // The accumulators alternate between two slots per step: a Tuple update
    // in place would have Halide 21 store its elements one by one, the
    // later mma calls reading accumulators already replaced.
    Func acc("acc");
    acc(lane, mi, ni, wm, wn, parity) = Halide::Tuple(0.f, 0.f, 0.f, 0.f);
    auto before = [&](int word) { return acc(lane, mi, ni, wm, wn, k % 2)[word]; };
    const std::array<Expr, 4> d = mma_m16n8k16(
        MmaInput::f16, {a(pair, row), a(pair, row + 8), a(pair + 4, row), a(pair + 4, row + 8)},
        {b(pair, column), b(pair + 4, column)}, {before(0), before(1), before(2), before(3)});
    acc(lane, mi, ni, wm, wn, (k + 1) % 2) = Halide::Tuple(d[0], d[1], d[2], d[3]);

    // Lane 4g + t holds C at rows g and g + 8 of each tile, columns 2t and
    // 2t + 1: words e + 2h for row 8h + g, column 2t + e. The output is
    // that many dimensions of one view of C, so each lane's part of it is
    // known to be one lane of the accumulators.
    Var e("e"), t("t"), h("h"), g("g"), lane_v("lane_v");
    const Expr last = k_steps % 2;
    std::vector<Expr> words;
    for (int w = 0; w < 4; ++w) {
      auto slot = [&](int p) { return acc(g * 4 + t, mi, ni, wm, wn, p)[w]; };
      words.push_back(Halide::select(last == 0, slot(0), slot(1)));
    }
    c(e, t, ni, h, g, mi, wn, wm) = Halide::mux(e + 2 * h, words);

    c.reorder(e, h, ni, mi, t, g, wn, wm)
        .fuse(t, g, lane_v)
        .unroll(e)
        .unroll(h)
        .unroll(ni)
        .unroll(mi)
        .gpu_blocks(wn, wm)
        .gpu_threads(lane_v);
    acc.compute_at(c, lane_v).bound(parity, 0, 2).unroll(mi).unroll(ni).unroll(parity);
    RVar k_pair("k_pair"), k_in_pair("k_in_pair");
    acc.update()
        .reorder(lane, mi, ni, wm, wn, k)
        .split(k, k_pair, k_in_pair, 2)
        .unroll(k_in_pair)
        .unroll(mi)
        .unroll(ni);

    a.dim(0).set_min(0);
    a.dim(1).set_min(0);
    b.dim(0).set_min(0).set_extent(a.dim(0).extent());
    b.dim(1).set_min(0);
    const int extents[] = {2, 4, tn, 2, 8, tm};
    for (int dim = 0; dim < 6; ++dim) c.dim(dim).set_bounds(0, extents[dim]);
    c.dim(6).set_min(0);
    c.dim(7).set_min(0);
  }
};

}  // namespace
}  // namespace attnforge

HALIDE_REGISTER_GENERATOR(attnforge::MmaGemmGenerator, mma_gemm)
