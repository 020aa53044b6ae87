#include "tensor_core_calls.h"

#include <string>
#include <vector>

namespace attnforge {

namespace {

using Halide::Expr;

// The f32 held in the low (high) 32 bits of a 64-bit result.
Expr low_f32(const Expr& bits) {
  return Halide::reinterpret(Halide::Float(32), Halide::cast<uint32_t>(bits));
}
Expr high_f32(const Expr& bits) {
  return low_f32(bits >> 32);
}

}  // namespace

std::array<Expr, 4> mma_m16n8k16(MmaInput input, const std::array<Expr, 4>& a,
                                 const std::array<Expr, 2>& b, const std::array<Expr, 4>& c) {
  std::vector<Expr> arguments;
  for (const Expr& word : a) arguments.push_back(Halide::reinterpret(Halide::UInt(32), word));
  for (const Expr& word : b) arguments.push_back(Halide::reinterpret(Halide::UInt(32), word));
  for (const Expr& value : c) arguments.push_back(Halide::reinterpret(Halide::UInt(32), value));
  const std::string name =
      std::string("attnforge_mma_") + (input == MmaInput::f16 ? "f16" : "bf16") + "_f32_";
  auto call = [&](const char* half) {
    return Halide::Internal::Call::make(Halide::UInt(64), name + half, arguments,
                                        Halide::Internal::Call::PureExtern);
  };
  const Expr lo = call("lo"), hi = call("hi");
  return {low_f32(lo), high_f32(lo), low_f32(hi), high_f32(hi)};
}

}  // namespace attnforge
