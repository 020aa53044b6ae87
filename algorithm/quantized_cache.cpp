#include "quantized_cache.h"

namespace attnforge {

Halide::Func dequantized_rows(const Halide::Func& values, const Halide::Func& scales,
                              const std::string& name) {
  Halide::Var d("d"), position("position"), h("h"), x("x");
  Halide::Func rows(name);
  rows(d, position, h, x) = Halide::cast<float>(values(d, position, h, x)) * scales(position, h, x);
  return rows;
}

}  // namespace attnforge
