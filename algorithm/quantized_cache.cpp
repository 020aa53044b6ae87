#include "quantized_cache.h"

namespace attnforge {

Halide::Func dequantized_rows(const Halide::Func& values, const Halide::Func& scales,
                              const std::string& name) {
  Halide::Var d("d"), position("position"), h("h"), x("x");
  Halide::Func rows(name);
  rows(d, position, h, x) = Halide::cast<float>(values(d, position, h, x)) * scales(position, h, x);
  return rows;
}

Halide::Func e4m3_levels(const Halide::Func& codes, const std::string& name) {
  Halide::Var d("d"), position("position"), h("h"), x("x");
  const Halide::Expr code = codes(d, position, h, x);
  // S.EEEE.MMM -> S.0EEEE.MMM0000000: the code sign-extended to 16 bits and
  // shifted left by 7 has the sign in bits 15 and 14; bit 14 is cleared.
  const Halide::Expr extended = Halide::cast<int16_t>(Halide::reinterpret(Halide::Int(8), code))
                                << 7;
  const Halide::Expr bits = Halide::reinterpret(Halide::UInt(16), extended) & 0xBFFF;
  Halide::Func levels(name);
  levels(d, position, h, x) = Halide::cast<float>(Halide::reinterpret(Halide::Float(16), bits));
  return levels;
}

Halide::Func e4m3_row_scales(const Halide::Func& scales, const std::string& name) {
  Halide::Var position("position"), h("h"), x("x");
  Halide::Func rows(name);
  rows(position, h, x) = scales(h) * kE4m3LevelUnit;
  return rows;
}

}  // namespace attnforge
