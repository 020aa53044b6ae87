// A tensor-core GEMM, C = A B with f16 inputs and f32 accumulation, from
// Halide 21 through the mma calls of tensor_core_calls.h. A block is
// warps_m x warps_n warps; each warp computes warp_tiles_m x warp_tiles_n mma
// tiles (16 x 8 each) of C over all of K, every lane holding its fragments'
// words in registers, as mma.m16n8k16 lays them out: lane = 4 * group +
// thread_in_group (mma_fragments.h).
//
// A is M x K row-major and B is K x N column-major (B^T row-major), each
// element pair along K packed in one 32-bit word (B's columns 16-byte
// aligned); C is M x N row-major. M must be a multiple of 16 * warp_tiles_m *
// warps_m, N of 8 * warp_tiles_n * warps_n, K of 32.
#include <Halide.h>

#include "algorithm/mma_fragments.h"
#include "algorithm/tensor_core_calls.h"

namespace attnforge {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Var;

class MmaGemmGenerator : public Halide::Generator<MmaGemmGenerator> {
 public:
  GeneratorParam<int> warp_tiles_m{"warp_tiles_m", 2, 1, 8};
  GeneratorParam<int> warp_tiles_n{"warp_tiles_n", 4, 1, 16};
  // Warps per block along M and N: a block's warps run on one SM together,
  // so the A rows and B columns they share are read from L1 rather than L2.
  GeneratorParam<int> warps_m{"warps_m", 1, 1, 8};
  GeneratorParam<int> warps_n{"warps_n", 1, 1, 8};

  Input<Buffer<uint32_t, 2>> a{"a"};  // (k pair, row of A)
  Input<Buffer<uint32_t, 2>> b{"b"};  // (k pair, column of B)
  // C as (e, t, ni, h, g, mi, wn, wm) (mma_gemm_view.h): element (row, column) =
  // ((wm * warp_tiles_m + mi) * 16 + 8h + g, (wn * warp_tiles_n + ni) * 8 + 2t + e).
  Output<Buffer<float, 8>> c{"c"};

  void generate() {
    const int tm = warp_tiles_m, tn = warp_tiles_n;
    // Steps of 16 elements (8 words) of K, one mma each, taken in pairs.
    const Expr k_pairs_of_steps = a.dim(0).extent() / 16;
    Var lane("lane"), mi("mi"), ni("ni"), wm("wm"), wn("wn"), parity("parity");
    Var w("w"), h("h"), kp("kp");
    RDom k(0, 2, 0, k_pairs_of_steps, "k");  // step k.y * 2 + k.x

    // A lane's four words of a column of B for two steps are adjacent
    // (mma_fragments.h): one 128-bit load. Its words of A come from two
    // rows per fragment, so they are loaded one by one, straight into the
    // fragment's registers.
    Func b_words("b_words");
    b_words(w, lane, ni, wn, kp) =
        b(mma_k_pair<Expr>(kp, lane, w), mma_fragment_row<Expr>((wn * tn + ni) * 8, lane, 0));

    // The accumulators alternate between two slots per step: a Tuple update
    // in place would have Halide 21 store its elements one by one, the
    // later mma calls reading accumulators already replaced.
    Func acc("acc");
    acc(lane, mi, ni, wm, wn, parity) = Halide::Tuple(0.f, 0.f, 0.f, 0.f);
    auto before = [&](int word) { return acc(lane, mi, ni, wm, wn, k.x)[word]; };
    const Expr step_word = k.x * 2, j = k.y;
    auto a_word = [&](int second, int half) {
      return a(mma_k_pair<Expr>(j, lane, step_word + second),
               mma_fragment_row<Expr>((wm * tm + mi) * 16, lane, half));
    };
    auto b_word = [&](int second) { return b_words(step_word + second, lane, ni, wn, j); };
    // Without CUDA (tests on the CPU) the mma is emulated from the same words
    // and the blocks, warps and lanes are loops.
    const bool cuda = get_target().has_feature(Halide::Target::CUDA);
    const std::array<Expr, 4> a_words = {a_word(0, 0), a_word(0, 1), a_word(1, 0), a_word(1, 1)};
    const std::array<Expr, 2> b_words_of_step = {b_word(0), b_word(1)};
    const std::array<Expr, 4> c_words = {before(0), before(1), before(2), before(3)};
    const std::array<Expr, 4> d =
        cuda ? mma_m16n8k16(MmaInput::f16, a_words, b_words_of_step, c_words)
             : emulated_mma_m16n8k16(MmaInput::f16, lane, a_words, b_words_of_step, c_words);
    acc(lane, mi, ni, wm, wn, 1 - k.x) = Halide::Tuple(d[0], d[1], d[2], d[3]);

    // Lane 4g + t holds C at rows g and g + 8 of each tile, columns 2t and
    // 2t + 1: words e + 2h for row 8h + g, column 2t + e. The output is
    // that many dimensions of one view of C, so each lane's part of it is
    // known to be one lane of the accumulators. The steps are even in
    // number, so the last result is in slot 0.
    Var e("e"), t("t"), g("g"), lane_v("lane_v"), wm_block("wm_block"), wn_block("wn_block");
    const Halide::FuncRef result = acc(g * 4 + t, mi, ni, wm, wn, 0);
    c(e, t, ni, h, g, mi, wn, wm) =
        Halide::mux(e + 2 * h, {result[0], result[1], result[2], result[3]});

    c.split(wn, wn_block, wn, warps_n)
        .split(wm, wm_block, wm, warps_m)
        .reorder(e, h, ni, mi, t, g, wn, wm, wn_block, wm_block)
        .fuse(t, g, lane_v)
        .unroll(e)
        .unroll(h)
        .unroll(ni)
        .unroll(mi);
    if (cuda) {
      c.gpu_blocks(wn_block, wm_block).gpu_threads(lane_v, wn, wm);
    } else {
      c.parallel(wm_block);
    }
    acc.compute_at(c, lane_v).bound(parity, 0, 2).unroll(mi).unroll(ni).unroll(parity);
    acc.update().reorder(lane, mi, ni, wm, wn, k.x, k.y).unroll(k.x).unroll(mi).unroll(ni);
    b_words.compute_at(acc, k.y)
        .store_in(Halide::MemoryType::Register)
        .bound_extent(w, 4)
        .vectorize(w)
        .unroll(ni);

    // K a multiple of 32 (whole pairs of steps); B's columns of whole
    // 16-byte groups, 16-byte aligned: a lane's four words are one load.
    a.dim(0).set_min(0).set_extent(a.dim(0).extent() / 16 * 16);
    a.dim(1).set_min(0);
    b.dim(0).set_min(0).set_extent(a.dim(0).extent());
    b.dim(1).set_min(0).set_stride(b.dim(1).stride() / 4 * 4);
    b.set_host_alignment(16);
    const int extents[] = {2, 4, tn, 2, 8, tm};
    for (int dim = 0; dim < 6; ++dim) c.dim(dim).set_bounds(0, extents[dim]);
    c.dim(6).set_min(0).set_extent(c.dim(6).extent() / warps_n * warps_n);
    c.dim(7).set_min(0).set_extent(c.dim(7).extent() / warps_m * warps_m);
  }
};

}  // namespace
}  // namespace attnforge

HALIDE_REGISTER_GENERATOR(attnforge::MmaGemmGenerator, mma_gemm)
