// The softmax's exponential: e^(x - max) where max is a maximum over the x it
// is given, so the argument is never positive.
#pragma once

#include <Halide.h>

namespace attnforge {

// e^(x - max) in f32 for x <= max: within 4e-7 relative error of e^(x - max),
// with x - max rounded to f32, while the result is a normal float
// (x - max >= -87.3); below that tiny and never negative, and exactly 0 once
// x - max <= -88.03 (e^-88.03 = 2^-127), masked logits among them. Exactly 1
// at x == max. Cheaper than Halide::exp, which handles every argument: a
// rounding by addition, a degree-5 polynomial and an exponent add.
Halide::Expr softmax_exp(const Halide::Expr& x, const Halide::Expr& max);

}  // namespace attnforge
