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
    // floor(log2(size)) for size >= 8: 31 minus its leading zeros.
    Halide::Expr doublings = 31 - Halide::cast<int>(Halide::count_leading_zeros(size)) - 3;
    Halide::Expr within =
        Halide::select(size < 8, Halide::cast<int>(size), 8 + Halide::min(doublings, 7));
    Halide::Expr bucket = within + Halide::select(distance > 0, 16, 0);
    return score + t("bucket_bias")(bucket, at.head);
  };
}
