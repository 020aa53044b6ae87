// Logit softcapping (Gemma 2, Grok): tanh(s / cap) * cap, which keeps every
// logit within (-cap, cap) and changes small ones little.
#pragma once

#include <Halide.h>

namespace attnforge {

// tanh(s / cap) * cap in f32, within 1.2e-6 * cap of the exact value and
// constant for |s| >= 7 * cap. A rational function rather than
// Halide::tanh, which calls the C library per element.
Halide::Expr softcapped(const Halide::Expr& s, float cap);

}  // namespace attnforge
