#include "softcap.h"

#include "softmax_exp.h"

namespace attnforge {

Halide::Expr softcapped(const Halide::Expr& s, float cap) {
  // tanh|x| = (1 - e) / (1 + e) with e = e^(-2|x|) in (0, 1]: an argument
  // softmax_exp takes (never positive) and a quotient that cannot overflow.
  Halide::Expr x = s * (1.0f / cap);
  Halide::Expr e = softmax_exp(-2.0f * Halide::abs(x), 0.0f);
  Halide::Expr magnitude = (cap - cap * e) / (1.0f + e);
  // The sign of s, set on the non-negative magnitude by its bit.
  Halide::Expr sign = Halide::reinterpret<uint32_t>(x) & Halide::Expr(0x80000000u);
  return Halide::reinterpret<float>(Halide::reinterpret<uint32_t>(magnitude) | sign);
}

}  // namespace attnforge
