// A contiguous K/V cache laid out in pages, as a paged spec's kernels read
// it: the benchmark and the tuner run paged kernels on the same values their
// contiguous counterparts see.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>
#include <vector>

namespace attnforge {

// A page table (page_width, batch), entry n + b * page_width the page that
// holds positions n * page_size.. of sequence b: every page of every
// sequence, at places shuffled by `seed` among batch * page_width pages.
std::vector<int32_t> shuffled_page_table(int batch, int page_width, uint32_t seed);

// Copies each position of `contiguous` (d, position, kv head, batch) to its
// place in `pages` (d, position in page, kv head, page) under `table` (as
// shuffled_page_table gives it). Both buffers are on the host, of one element
// type; positions past the contiguous length are left as they are.
void scatter_into_pages(const halide_buffer_t& contiguous, halide_buffer_t& pages,
                        const std::vector<int32_t>& table, int page_width);

}  // namespace attnforge
