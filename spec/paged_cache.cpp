#include "paged_cache.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace attnforge {

namespace {

// The address of element (x0, x1, x2, x3) of a 4-D host buffer.
uint8_t* address_of(const halide_buffer_t& buffer, int x0, int x1, int x2, int x3) {
  const int at[4] = {x0, x1, x2, x3};
  int64_t offset = 0;
  for (int n = 0; n < 4; ++n) offset += static_cast<int64_t>(at[n]) * buffer.dim[n].stride;
  return buffer.host + offset * ((buffer.type.bits + 7) / 8);
}

// Each position of `contiguous` copied to its place in `pages` under `table`.
void scatter_into_pages(const halide_buffer_t& contiguous, halide_buffer_t& pages,
                        const Halide::Runtime::Buffer<int32_t>& table) {
  const int head_dim = contiguous.dim[0].extent, length = contiguous.dim[1].extent;
  const int heads = contiguous.dim[2].extent, batch = contiguous.dim[3].extent;
  const int page_size = pages.dim[1].extent;
  const size_t element = (contiguous.type.bits + 7) / 8;
  for (int b = 0; b < batch; ++b) {
    for (int position = 0; position < length; ++position) {
      const int page = table(position / page_size, b);
      for (int h = 0; h < heads; ++h) {
        for (int d = 0; d < head_dim; ++d) {
          std::memcpy(address_of(pages, d, position % page_size, h, page),
                      address_of(contiguous, d, position, h, b), element);
        }
      }
    }
  }
}

}  // namespace

PagedCache page_cache(const halide_buffer_t& k, const halide_buffer_t& v, int page_size,
                      uint32_t seed) {
  const int batch = k.dim[3].extent;
  const int width = std::max((k.dim[1].extent + page_size - 1) / page_size, 1);
  PagedCache cache;
  cache.table = Halide::Runtime::Buffer<int32_t>(width, batch);
  std::iota(cache.table.begin(), cache.table.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(cache.table.begin(), cache.table.end(), rng);
  for (auto [paged, contiguous] : {std::pair{&cache.k, &k}, std::pair{&cache.v, &v}}) {
    *paged = Halide::Runtime::Buffer<>(contiguous->type, contiguous->dim[0].extent, page_size,
                                       contiguous->dim[2].extent, batch * width);
    std::fill_n(static_cast<uint8_t*>(paged->data()), paged->size_in_bytes(), 0);
    scatter_into_pages(*contiguous, *paged->raw_buffer(), cache.table);
  }
  return cache;
}

}  // namespace attnforge
