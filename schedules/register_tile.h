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
// the inner loops a variable extent. `pair`: a reduction of extent 2 taken
// inside each lane (a dot product of pairs, as vdpbf16ps computes it).
inline void register_tile(Halide::Func consumer, Halide::Func product, const Halide::Var& x,
                          const Halide::Var& y, const std::vector<Halide::RVar>& reduction,
                          int lanes, int vectors, int rows, const Halide::Var& xo,
                          const Halide::Var& yo, const Halide::Var& product_row,
                          const Halide::RVar* pair = nullptr) {
  Halide::Var xi("xi"), yi("yi");
  consumer.tile(x, y, xo, yo, xi, yi, lanes * vectors, rows, Halide::TailStrategy::RoundUp)
      .vectorize(xi, lanes)
      .unroll(yi);
  product.compute_at(consumer, xo).vectorize(x, lanes).unroll(x).unroll(product_row);
  std::vector<Halide::VarOrRVar> order;
  if (pair) order.push_back(*pair);
  order.push_back(x);
  order.push_back(product_row);
  order.insert(order.end(), reduction.begin(), reduction.end());
  Halide::Stage update = product.update();
  update.reorder(order);
  // Pairs are summed in a different order than one at a time: atomic() states that this is meant.
  if (pair) update.atomic(true).vectorize(*pair);
  update.vectorize(x, lanes).unroll(x).unroll(product_row);
}

// The same product (pure vector dim x, row dim y) computed `chunk` steps of
// `reduction` at a time, at `level`: within a chunk, a register tile of
// (lanes * vectors) x rows per loop iteration, every tile of the product's
// region before the next chunk, so the chunk's inputs stay in L1 while all
// tiles read them. A tile's accumulators are loaded before its chunk and
// stored after. The region must be a whole number of tiles. `outer`: further
// reduction loops, outside the chunks (outermost last); `pair`: a reduction
// of extent 2 inside each lane, as register_tile's. Returns the loop over
// chunks, where what a chunk reads may be computed.
inline Halide::RVar chunked_register_tile(Halide::Func product, const Halide::Var& x,
                                          const Halide::Var& y, const Halide::RVar& reduction,
                                          int chunk, int lanes, int vectors, int rows,
                                          const Halide::LoopLevel& level, int unroll,
                                          const std::vector<Halide::RVar>& outer = {},
                                          const Halide::RVar* pair = nullptr) {
  Halide::RVar chunks("chunks"), in_chunk("in_chunk");
  Halide::Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  product.compute_at(level).vectorize(x, lanes);
  std::vector<Halide::VarOrRVar> order = {xi, yi, in_chunk, xo, yo, chunks};
  if (pair) order.insert(order.begin(), *pair);
  order.insert(order.end(), outer.begin(), outer.end());
  Halide::Stage update = product.update();
  update.split(reduction, chunks, in_chunk, chunk)
      .tile(x, y, xo, yo, xi, yi, lanes * vectors, rows, Halide::TailStrategy::GuardWithIf)
      .reorder(order);
  if (pair) update.atomic(true).vectorize(*pair);
  update.vectorize(xi, lanes).unroll(xi).unroll(yi);
  if (unroll > 1) product.update().unroll(in_chunk, unroll);
  return chunks;
}

}  // namespace attnforge::schedules
