#include "softcap.h"

namespace attnforge {

namespace {

// tanh x = x P(x^2) / Q(x^2) on [-kClamp, kClamp], fit for least maximum
// absolute error (below 5e-7 in f32, with the clamp's own 1 - tanh(kClamp)
// included), and never above 1 in magnitude.
constexpr float kClamp = 7.75f;
constexpr float kNumerator[] = {9.999992842e-01f, 1.272214795e-01f, 2.707177092e-03f,
                                7.253484711e-06f, -6.326709379e-09f};
constexpr float kDenominator[] = {4.605521530e-01f, 2.289412990e-02f, 1.982086431e-04f};

}  // namespace

Halide::Expr softcapped(const Halide::Expr& s, float cap) {
  // A rational function rather than (1 - e^-2x) / (1 + e^-2x): about half
  // the instructions per logit, which matters next to the softmax's own
  // exponential. Clamping s keeps the polynomials on the range they were fit.
  Halide::Expr clamped = Halide::clamp(s, -kClamp * cap, kClamp * cap);
  Halide::Expr x = clamped * (1.0f / cap);
  Halide::Expr z = x * x;
  Halide::Expr numerator = kNumerator[4];
  for (int c = 3; c >= 0; --c) numerator = numerator * z + kNumerator[c];
  Halide::Expr denominator = kDenominator[2];
  for (int c = 1; c >= 0; --c) denominator = denominator * z + kDenominator[c];
  denominator = denominator * z + 1.0f;
  // cap * x is the clamped logit itself.
  return clamped * numerator / denominator;
}

}  // namespace attnforge
