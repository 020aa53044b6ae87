// The register tile every matrix product here is scheduled with.
#pragma once

#include <Halide.h>

#include <vector>

namespace attnforge::schedules {

// A matrix product `product` (pure vector dim x, row dim y, reduction
// innermost first) whose
// consumer is tiled into register tiles of (lanes * vectors) x rows, with outer
// loops xo and yo: the product is computed per register tile, reduction loop
// outermost, so its accumulators stay in registers. The consumer's row dim
// may be a split of the product's (`product_row`). Tiles round up, so the
// consumer must be an intermediate whose producers are read at clamped
// positions: a partial tile computes a few unused values instead of giving
// the inner loops a variable extent.
inline void register_tile(Halide::Func consumer, Halide::Func product, const Halide::Var& x,
                          const Halide::Var& y, const std::vector<Halide::RVar>& reduction,
                          int lanes, int vectors, int rows, const Halide::Var& xo,
                          const Halide::Var& yo, const Halide::Var& product_row) {
  Halide::Var xi("xi"), yi("yi");
  consumer.tile(x, y, xo, yo, xi, yi, lanes * vectors, rows, Halide::TailStrategy::RoundUp)
      .vectorize(xi, lanes)
      .unroll(yi);
  product.compute_at(consumer, xo).vectorize(x, lanes).unroll(x).unroll(product_row);
  std::vector<Halide::VarOrRVar> order = {x, product_row};
  order.insert(order.end(), reduction.begin(), reduction.end());
  product.update().reorder(order).vectorize(x, lanes).unroll(x).unroll(product_row);
}

}  // namespace attnforge::schedules
