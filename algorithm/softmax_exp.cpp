#include "softmax_exp.h"

namespace attnforge {

namespace {

constexpr float kLog2E = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// e^f = 1 + f (c1 + f (c2 + ...)) on [-ln2/2, ln2/2], fit for least maximum
// relative error (9.3e-8), with the constant term exactly 1.
constexpr float kCoefficients[] = {9.999997146e-01f, 4.999914639e-01f, 1.666761393e-01f,
                                   4.189829912e-02f, 8.291808552e-03f};
constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23

// Below this every result is 0: k is at most -127 and the exponent add
// underflows (see the end of softmax_exp).
constexpr float kLowest = -88.7f;

}  // namespace

Halide::Expr softmax_exp(const Halide::Expr& x, const Halide::Expr& max) {
  // The difference first, kept as written: Halide would otherwise distribute
  // the scaling below over a constant max, and scaling a large logit before
  // subtracting rounds away the small differences that matter.
  Halide::Expr d = Halide::max(Halide::strict_float(x - max), kLowest);
  // e^d = 2^k e^f with k = round(d / ln2). Adding 1.5 * 2^23 rounds to the
  // nearest integer and leaves k in the low bits: no rounding instruction,
  // which has no 512-bit form in Halide's x86 code.
  Halide::Expr shifted = Halide::reinterpret<int32_t>(d * kLog2E + kRoundingShift);
  Halide::Expr k = shifted - Halide::reinterpret<int32_t>(kRoundingShift);
  Halide::Expr f = d - Halide::cast<float>(k) * kLn2;  // one fused multiply-add
  Halide::Expr poly = kCoefficients[4];
  for (int c = 3; c >= 0; --c) poly = poly * f + kCoefficients[c];
  poly = poly * f + 1.0f;
  // Adding k to the exponent field; below 2^-126 that goes negative and is
  // clamped to +0, so masked logits give exactly 0.
  Halide::Expr bits = Halide::reinterpret<int32_t>(poly) + (k << 23);
  return Halide::reinterpret<float>(Halide::max(bits, 0));
}

}  // namespace attnforge
