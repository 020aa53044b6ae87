// Logit softcapping written as a modifier: 30 tanh(s / 30), what the spec
// token .softcap30 computes with a faster tanh.
#include "algorithm/modifier.h"

ATTNFORGE_MODIFIER(softcap, m) {
  m.score = [](const Halide::Expr& score, const attnforge::ModifierIndex&,
               const attnforge::ModifierTensors&) { return 30.0f * Halide::tanh(score / 30.0f); };
}
