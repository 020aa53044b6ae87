#include "bf16_bits.h"

#include <vector>

namespace attnforge {

Halide::Expr f32_of_bf16_bits(const Halide::Expr& bits) {
  return Halide::reinterpret(Halide::Float(32), Halide::cast<uint32_t>(bits) << 16);
}

Halide::Expr bf16_bits_of(const Halide::Expr& value) {
  const Halide::Expr bits = Halide::reinterpret(Halide::UInt(32), value);
  return Halide::cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

Halide::Func f32_of_bf16_bits(const Halide::Func& bits, int dimensions, const std::string& name) {
  std::vector<Halide::Var> vars(dimensions);
  std::vector<Halide::Expr> args(vars.begin(), vars.end());
  Halide::Func widened(name);
  widened(vars) = f32_of_bf16_bits(bits(args));
  return widened;
}

}  // namespace attnforge
