// bf16 as its 16 bits, for GPU kernels: Halide 21's PTX back end aborts on
// bf16 loads, so GPU kernels take and return bf16 tensors as uint16 and
// convert on the integer bits, with no bf16 type in the kernel.
#pragma once

#include <Halide.h>

#include <string>

namespace attnforge {

// The f32 a bf16's bits stand for (a bf16 is an f32's upper half).
Halide::Expr f32_of_bf16_bits(const Halide::Expr& bits);

// An f32 rounded to the nearest bf16 (ties to even), as its 16 bits. For
// finite values: probabilities, outputs and gradients.
Halide::Expr bf16_bits_of(const Halide::Expr& value);

// `bits` (a Func of bf16 bits over `dimensions` pure vars) read as f32.
Halide::Func f32_of_bf16_bits(const Halide::Func& bits, int dimensions, const std::string& name);

}  // namespace attnforge
