#include "softcap.h"

#include <cfloat>
#include <cmath>
#include <vector>

namespace attnforge {

namespace {

// tanh x = x P(x^2) / Q(x^2) on [-kClamp, kClamp], fit for least maximum
// absolute error (1.2e-6 in f32, with the clamp's own 1 - tanh(kClamp)
// included).
constexpr double kClamp = 7.0;
constexpr double kNumerator[] = {9.999956915e-01, 1.230227397e-01, 2.277069204e-03,
                                 3.930386171e-06};
constexpr double kDenominator[] = {1.0, 4.563412372e-01, 2.107255671e-02, 1.423595022e-04};

// P(s^2 / cap^2) as a polynomial in s^2: coefficient i over cap^(2i), in
// f32, or nothing where one is not a normal f32 (caps far from 1).
std::vector<float> in_squared_logit(const double (&coefficients)[4], double cap) {
  std::vector<float> scaled;
  for (int i = 0; i < 4; ++i) {
    const double c = coefficients[i] / std::pow(cap, 2 * i);
    if (!(std::abs(c) >= FLT_MIN && std::abs(c) <= FLT_MAX)) return {};
    scaled.push_back(static_cast<float>(c));
  }
  return scaled;
}

Halide::Expr horner(const std::vector<float>& coefficients, const Halide::Expr& z) {
  Halide::Expr sum = coefficients.back();
  for (int i = static_cast<int>(coefficients.size()) - 2; i >= 0; --i) {
    sum = sum * z + coefficients[i];
  }
  return sum;
}

}  // namespace

Halide::Expr softcapped(const Halide::Expr& s, float cap) {
  // A rational function rather than (1 - e^-2x) / (1 + e^-2x): about half
  // the instructions per logit, which matters next to the softmax's own
  // exponential. Clamping s keeps the polynomials on the range they were fit.
  const float bound = static_cast<float>(kClamp * cap);
  Halide::Expr clamped = Halide::clamp(s, -bound, bound);
  std::vector<float> numerator = in_squared_logit(kNumerator, cap);
  std::vector<float> denominator = in_squared_logit(kDenominator, cap);
  if (!numerator.empty() && !denominator.empty()) {
    // cap * tanh(s / cap) = s P'(s^2) / Q'(s^2): no division by the cap.
    Halide::Expr z = clamped * clamped;
    return clamped * horner(numerator, z) / horner(denominator, z);
  }
  Halide::Expr x = clamped * (1.0f / cap);
  Halide::Expr z = x * x;
  return clamped * horner(in_squared_logit(kNumerator, 1.0), z) /
         horner(in_squared_logit(kDenominator, 1.0), z);
}

}  // namespace attnforge
