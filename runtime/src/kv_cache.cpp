#include "attnforge/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "element_types.h"
#include "spec/dtype_traits.h"
#include "spec/kv_quantization.h"
#include "tensor_checks.h"

namespace attnforge {

namespace {

using runtime::invalid;

// Where each new row goes: element offsets of its cache row and its scale.
struct RowTarget {
  int64_t cache = 0;
  int64_t scale = 0;
};

int32_t at(const TensorView& t, int64_t i0, int64_t i1 = 0) {
  return static_cast<const int32_t*>(
      t.data)[i0 * t.strides[0] + (t.rank > 1 ? i1 * t.strides[1] : 0)];
}

Status check_tensors(const TensorView& rows, const TensorView& positions, const TensorView& cache,
                     const TensorView& scales, const TensorView* table) {
  using runtime::check_layout;
  using runtime::check_type;
  ATTNFORGE_CHECK(check_layout(rows, "rows", 4, "[B, H_kv, n, D]"));
  if (!runtime::is_storage_type(rows.type)) {
    return invalid(
        fmt::format("rows: expected element type f32, f16 or bf16, got {}", to_string(rows.type)));
  }
  const char* cache_shape = table ? "[num_pages, H_kv, page_size, D]" : "[B, H_kv, Lk, D]";
  ATTNFORGE_CHECK(check_layout(cache, "cache", 4, cache_shape));
  if (!runtime::is_cache_type(cache.type)) {
    return invalid(fmt::format("cache: expected element type i8 (kv8) or f8e4m3 (kvfp8), got {}",
                               to_string(cache.type)));
  }
  const bool e4m3 = cache.type == ElementType::f8e4m3;
  const char* scales_shape = e4m3    ? "[H_kv] (one per KV head of the cache)"
                             : table ? "[num_pages, H_kv, page_size] (cache's first three)"
                                     : "[B, H_kv, Lk] (cache's first three)";
  ATTNFORGE_CHECK(check_layout(scales, "scales", e4m3 ? 1 : 3, scales_shape));
  ATTNFORGE_CHECK(check_type(scales, "scales", ElementType::f32));
  ATTNFORGE_CHECK(check_layout(positions, "positions", 1, "[B]"));
  ATTNFORGE_CHECK(check_type(positions, "positions", ElementType::i32));
  for (const auto& [t, name] : {std::pair{&rows, "rows"},
                                {&positions, "positions"},
                                {&cache, "cache"},
                                {&scales, "scales"},
                                {table, "page_table"}}) {
    if (t && t->device != Device::cpu) {
      return invalid(fmt::format("{}: on {}; the 8-bit cache is written in CPU memory", name,
                                 to_string(t->device)));
    }
  }
  const int64_t b = rows.shape[0], h_kv = rows.shape[1], d = rows.shape[3];
  if (positions.shape[0] != b) {
    return invalid(fmt::format("positions: expected shape [B] = [{}] (rows' B), got {}", b,
                               runtime::shape_text(positions)));
  }
  if (cache.shape[1] != h_kv || cache.shape[3] != d || (!table && cache.shape[0] != b)) {
    return invalid(
        fmt::format("cache: expected shape {} with {} = {}, H_kv = {}, D = {} (as "
                    "rows), got {}",
                    cache_shape, table ? "num_pages >= 1" : "B", table ? 0 : b, h_kv, d,
                    runtime::shape_text(cache)));
  }
  if (e4m3) {
    ATTNFORGE_CHECK(runtime::check_extents(scales, "scales", {h_kv}, scales_shape));
    for (int64_t h = 0; h < h_kv; ++h) {
      const float scale = static_cast<const float*>(scales.data)[h * scales.strides[0]];
      if (!(std::isfinite(scale) && scale > 0)) {
        return invalid(fmt::format(
            "scales: [{}] is {}; an fp8 cache's scale per KV head is finite and above 0", h,
            scale));
      }
    }
  } else {
    ATTNFORGE_CHECK(runtime::check_extents(
        scales, "scales", {cache.shape[0], cache.shape[1], cache.shape[2]}, scales_shape));
  }
  if (table) {
    ATTNFORGE_CHECK(check_layout(*table, "page_table", 2, "[B, max_pages]"));
    ATTNFORGE_CHECK(check_type(*table, "page_table", ElementType::i32));
    if (table->shape[0] != b) {
      return invalid(fmt::format("page_table: expected shape [B, max_pages] = [{}, ...], got {}", b,
                                 runtime::shape_text(*table)));
    }
  }
  return Status::success();
}

// The target of every new row, in (b, h, row) order, or the first bad position.
Status row_targets(const TensorView& rows, const TensorView& positions, const TensorView& cache,
                   const TensorView& scales, const TensorView* table,
                   std::vector<RowTarget>* targets) {
  const int64_t B = rows.shape[0], H = rows.shape[1], n = rows.shape[2];
  const int64_t page = cache.shape[2];
  const int64_t capacity = table ? table->shape[1] * page : cache.shape[2];
  for (int64_t b = 0; b < B; ++b) {
    const int64_t first = at(positions, b);
    if (first < 0 || first + n > capacity) {
      return invalid(fmt::format(
          "positions: [{}] is {}; {} rows from there need positions {}..{}, and the {} holds 0..{}",
          b, first, n, first, first + n - 1,
          table ? "page table (max_pages x page_size)" : "cache (Lk)", capacity - 1));
    }
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t r = 0; r < n; ++r) {
        const int64_t p = first + r;
        int64_t slot = b, row = p;
        if (table) {
          slot = at(*table, b, p / page);
          row = p % page;
          if (slot < 0 || slot >= cache.shape[0]) {
            return invalid(
                fmt::format("page_table: [{}, {}] is {}; position {} of sequence {} needs a page, "
                            "0..{} (num_pages - 1)",
                            b, p / page, slot, p, b, cache.shape[0] - 1));
          }
        }
        const int64_t scale = scales.rank == 1 ? h * scales.strides[0]
                                               : slot * scales.strides[0] + h * scales.strides[1] +
                                                     row * scales.strides[2];
        targets->push_back(
            {slot * cache.strides[0] + h * cache.strides[1] + row * cache.strides[2], scale});
      }
    }
  }
  return Status::success();
}

// Two new rows on one cache row (pages shared by sequences) would leave
// whichever ran last.
Status check_distinct(std::vector<RowTarget> targets) {
  std::sort(targets.begin(), targets.end(),
            [](const RowTarget& a, const RowTarget& b) { return a.cache < b.cache; });
  for (size_t t = 1; t < targets.size(); ++t) {
    if (targets[t].cache == targets[t - 1].cache) {
      return invalid(
          "page_table: two new rows map to one cache row (sequences share a page at the "
          "positions written)");
    }
  }
  return Status::success();
}

}  // namespace

Status write_quantized_rows(const TensorView& rows, const TensorView& positions,
                            const TensorView& cache, const TensorView& scales,
                            const TensorView* page_table) {
  ATTNFORGE_CHECK(check_tensors(rows, positions, cache, scales, page_table));
  std::vector<RowTarget> targets;
  ATTNFORGE_CHECK(row_targets(rows, positions, cache, scales, page_table, &targets));
  ATTNFORGE_CHECK(check_distinct(targets));

  const int64_t B = rows.shape[0], H = rows.shape[1], n = rows.shape[2], D = rows.shape[3];
  const DTypeTraits& element = traits_of(runtime::storage_type(rows.type));
  const auto* source = static_cast<const unsigned char*>(rows.data);
  // Read every row first: a value that is not finite is an error before anything is written.
  std::vector<float> values(static_cast<size_t>(B * H * n * D));
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < n; ++r)
        for (int64_t d = 0; d < D; ++d, ++next) {
          const int64_t offset =
              b * rows.strides[0] + h * rows.strides[1] + r * rows.strides[2] + d * rows.strides[3];
          values[next] = element.load(source + offset * element.bytes);
          if (!std::isfinite(values[next])) {
            return invalid(
                fmt::format("rows: [{}, {}, {}, {}] is {}; the cache stores finite values", b, h, r,
                            d, values[next]));
          }
        }
  auto* scale_at = static_cast<float*>(scales.data);
  if (cache.type == ElementType::f8e4m3) {
    auto* cache_at = static_cast<uint8_t*>(cache.data);
    for (size_t t = 0; t < targets.size(); ++t) {
      const float scale = scale_at[targets[t].scale];
      for (int64_t d = 0; d < D; ++d) {
        cache_at[targets[t].cache + d * cache.strides[3]] = e4m3_code(values[t * D + d] / scale);
      }
    }
    return Status::success();
  }
  auto* cache_at = static_cast<int8_t*>(cache.data);
  std::vector<int8_t> levels(static_cast<size_t>(D));
  for (size_t t = 0; t < targets.size(); ++t) {
    scale_at[targets[t].scale] =
        quantize_row(values.data() + t * D, static_cast<int>(D), levels.data());
    for (int64_t d = 0; d < D; ++d) cache_at[targets[t].cache + d * cache.strides[3]] = levels[d];
  }
  return Status::success();
}

}  // namespace attnforge
