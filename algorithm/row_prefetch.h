// Rows of a paged KV cache prefetched ahead of the rows attention reads.
// Halide prefetches a box of a buffer, and the box around rows that a page
// table scatters is the whole cache. So the algorithm marks the rows to fetch
// with a call that carries each row's place in its buffer, read by the Func in
// whose loop they should be fetched, and a lowering pass turns each call into
// one prefetch per cache line of its rows, and its value into 0.
#pragma once

#include <Halide.h>

#include <vector>

namespace attnforge {

// Each row is prefetched one line of this many bytes at a time.
constexpr int kCacheLineBytes = 64;

// `elements` elements from element `offset` of `buffer` (its storage order).
struct BufferRow {
  Halide::Parameter buffer;
  Halide::Expr offset;
  int elements = 0;
};

// A float 0 once lowered; where a Func reads it, its loops prefetch `rows`.
Halide::Expr prefetch_rows(const std::vector<BufferRow>& rows);

// Adds the pass that lowers prefetch_rows to `pipeline`; it runs after
// Halide's own passes and leaves pipelines without such calls as they are.
void lower_row_prefetches(Halide::Pipeline pipeline);

}  // namespace attnforge
