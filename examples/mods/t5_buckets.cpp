// T5's relative-position bias: the distance key - query falls into one of 32
// buckets (16 each way: exact up to 7, then one per doubling), and each head
// learns a bias per bucket, a [H, 32] f32 table given per call.
#include "algorithm/modifier.h"

using attnforge::ModifierDimension;
using attnforge::ModifierExtent;

ATTNFORGE_MODIFIER(t5, m) {
  m.tensor("bucket_bias", Halide::Float(32),
           {ModifierDimension::fixed_size(32), ModifierExtent::heads},
           [](const std::vector<int>& at) { return 0.1 * ((at[0] + at[1]) % 7) - 0.3; });
  m.score = [](const Halide::Expr& score, const attnforge::ModifierIndex& at,
               const attnforge::ModifierTensors& t) {
    Halide::Expr distance = at.key - at.query;
    Halide::Expr size = Halide::abs(distance);  // uint32
    // min(floor(log2(size)) - 3, 7) for size >= 8: the doublings past 8 it
    // reaches, counted by comparisons (which every GPU backend has, where
    // OpenCL C lacks Halide's count_leading_zeros).
    Halide::Expr doublings = 0;
    for (int bound = 16; bound <= 1024; bound *= 2) {
      doublings += Halide::select(size >= bound, 1, 0);
    }
    Halide::Expr within = Halide::select(size < 8, Halide::cast<int>(size), 8 + doublings);
    Halide::Expr bucket = within + Halide::select(distance > 0, 16, 0);
    return score + t("bucket_bias")(bucket, at.head);
  };
}
