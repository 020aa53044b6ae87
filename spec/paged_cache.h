// A contiguous K/V cache laid out in pages, as a paged spec's kernels read
// it: the benchmark and the tuner run paged kernels on the same values their
// contiguous counterparts see.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

namespace attnforge {

struct PagedCache {
  // (max_pages, B): entry (n, b) is the page holding positions n * P.. of sequence b.
  Halide::Runtime::Buffer<int32_t> table;
  // (d, position in page, kv head, page); positions past the cache's length are 0.
  Halide::Runtime::Buffer<> k, v;
};

// k and v (d, position, kv head, batch) on the host, in pages of `page_size`
// positions at places among B * max_pages pages shuffled by `seed`.
PagedCache page_cache(const halide_buffer_t& k, const halide_buffer_t& v, int page_size,
                      uint32_t seed);

}  // namespace attnforge
