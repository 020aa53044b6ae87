// ALiBi written as a modifier: each head's slope, given per call, times the
// distance between query and key, subtracted from the logit; what the spec
// token .alibi computes (queries aligned top-left).
#include "algorithm/modifier.h"

ATTNFORGE_MODIFIER(alibi, m) {
  // Sample slopes for tuning: 2^-1, 2^-2, ... (a model's come per call).
  m.tensor("slopes", Halide::Float(32), {attnforge::ModifierExtent::heads},
           [](const std::vector<int>& at) { return std::exp2(-1.0 - at[0]); });
  m.score = [](const Halide::Expr& score, const attnforge::ModifierIndex& at,
               const attnforge::ModifierTensors& t) {
    Halide::Expr distance = Halide::cast<float>(Halide::abs(at.key - at.query));
    return score - t("slopes")(at.head) * distance;
  };
}
