// 8-bit KV caches (kv8: i8 rows, kvfp8: e4m3 codes) through the runtime:
// rows written with write_quantized_rows (a prefill, then one decoding step
// each) land where their positions say, within half a step of their values,
// and attention() over them matches the double reference on the cache as
// written; every bad write is named and writes nothing; a call that gives
// 8-bit k and v without their scales (or scales without them) is named.
#include "attnforge/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attnforge/attention.h"
#include "spec/dtype_traits.h"
#include "spec/kv_quantization.h"
#include "tests/reference/attention_reference.h"
#include "tests/reference/kv_quantizers.h"
#include "tests/support/attention_case.h"

namespace attnforge::testing {
namespace {

constexpr int kHeads = 8, kKvHeads = 2, kDim = 64;
// kvfp8's scale per KV head for values in [-1, 1]: 1 is code 400's value.
constexpr float kFp8Scale = 1.0f / 400;

std::vector<float> random_values(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

// One sequence per batch entry, its K and V rows [B, H_kv, L, D] in f32, a
// cache of `capacity` positions (contiguous, or pages of `page` positions in
// shuffled order), and its lengths so far.
struct Cache {
  Cache(int batch, int capacity, int page, KvStorage storage = KvStorage::int8)
      : batch(batch), capacity(capacity), page(page), storage(storage), lengths(batch, 0) {
    const int width = page ? (capacity + page - 1) / page : 0;
    const int slots = page ? batch * width : batch;
    const int rows = page ? page : capacity;
    k.assign(size_t(slots) * kKvHeads * rows * kDim, 0);
    v = k;
    const ElementType type = fp8() ? ElementType::f8e4m3 : ElementType::i8;
    k_view = TensorView::contiguous(k.data(), type, {slots, kKvHeads, rows, kDim});
    v_view = TensorView::contiguous(v.data(), type, {slots, kKvHeads, rows, kDim});
    if (fp8()) {
      k_scale.assign(kKvHeads, kFp8Scale);
      v_scale = k_scale;
      k_scale_view = TensorView::contiguous(k_scale.data(), ElementType::f32, {kKvHeads});
      v_scale_view = TensorView::contiguous(v_scale.data(), ElementType::f32, {kKvHeads});
    } else {
      k_scale.assign(size_t(slots) * kKvHeads * rows, 0.0f);
      v_scale = k_scale;
      k_scale_view =
          TensorView::contiguous(k_scale.data(), ElementType::f32, {slots, kKvHeads, rows});
      v_scale_view =
          TensorView::contiguous(v_scale.data(), ElementType::f32, {slots, kKvHeads, rows});
    }
    if (page) {
      std::vector<int> place(slots);
      std::iota(place.begin(), place.end(), 0);
      std::shuffle(place.begin(), place.end(), std::mt19937(7));
      table = place;
      table_view = TensorView::contiguous(table.data(), ElementType::i32, {batch, width});
    }
    source_k.resize(batch);
    source_v.resize(batch);
  }

  // Writes n new rows per sequence at its current length.
  Status append(int n, uint32_t seed) {
    const size_t count = size_t(batch) * kKvHeads * n * kDim;
    std::vector<float> new_k = random_values(count, seed), new_v = random_values(count, seed + 1);
    std::vector<int32_t> positions(lengths.begin(), lengths.end());
    const TensorView tpositions =
        TensorView::contiguous(positions.data(), ElementType::i32, {batch});
    const TensorView* t = page ? &table_view : nullptr;
    Status status = write_quantized_rows(
        TensorView::contiguous(new_k.data(), ElementType::f32, {batch, kKvHeads, n, kDim}),
        tpositions, k_view, k_scale_view, t);
    if (!status.ok()) return status;
    status = write_quantized_rows(
        TensorView::contiguous(new_v.data(), ElementType::f32, {batch, kKvHeads, n, kDim}),
        tpositions, v_view, v_scale_view, t);
    if (!status.ok()) return status;
    for (int b = 0; b < batch; ++b) {
      for (int h = 0; h < kKvHeads; ++h) {
        for (int r = 0; r < n; ++r) {
          const size_t from = ((size_t(b) * kKvHeads + h) * n + r) * kDim;
          auto &k_rows = source_k[b], &v_rows = source_v[b];
          k_rows.resize(kKvHeads);
          v_rows.resize(kKvHeads);
          k_rows[h].insert(k_rows[h].end(), new_k.begin() + from, new_k.begin() + from + kDim);
          v_rows[h].insert(v_rows[h].end(), new_v.begin() + from, new_v.begin() + from + kDim);
        }
      }
      lengths[b] += n;
    }
    return Status::success();
  }

  bool fp8() const { return storage == KvStorage::fp8_e4m3; }

  int batch, capacity, page;
  KvStorage storage;
  std::vector<int> lengths;
  std::vector<int8_t> k, v;  // int8 levels, or e4m3 codes' bytes
  std::vector<float> k_scale, v_scale;
  std::vector<int32_t> table;
  TensorView k_view, v_view, k_scale_view, v_scale_view, table_view;
  // Per sequence and KV head, every row written so far, in f32.
  std::vector<std::vector<std::vector<double>>> source_k, source_v;

  // Element d of position p of sequence b, KV head h, as the cache holds it:
  // level * scale, checked to be within half a step of the value written
  // (e4m3 codes by their definition: a step is 1/8 of the value's binade).
  double read(bool values, int b, int h, int p, int d) const {
    const int rows = page ? page : capacity;
    const int slot = page ? table[b * table_view.shape[1] + p / page] : b;
    const size_t row = (size_t(slot) * kKvHeads + h) * rows + (page ? p % page : p);
    const int8_t level = (values ? v : k)[row * kDim + d];
    const double written = (values ? source_v : source_k)[b][h][size_t(p) * kDim + d];
    if (fp8()) {
      const double scale = (values ? v_scale : k_scale)[h];
      const double stored = reference::e4m3_value(static_cast<uint8_t>(level)) * scale;
      const double half_step = std::max(std::fabs(written) / 16, std::ldexp(scale, -10));
      EXPECT_LE(std::fabs(stored - written), half_step * (1 + 1e-5)) << b << " " << h << " " << p;
      return stored;
    }
    const float scale = (values ? v_scale : k_scale)[row];
    const double stored = double(level) * scale;
    EXPECT_LE(std::fabs(stored - written), scale * (0.5 + 1e-5)) << b << " " << h << " " << p;
    return stored;
  }
};

// Decodes `q_len` queries per sequence over the cache (causal, bottom-right,
// key padding) and compares with the reference on the rows as the reference
// quantizer reads them back.
void expect_decoding_matches_reference(Cache& cache, int q_len, ElementType q_type) {
  const int B = cache.batch,
            Lk = cache.page ? cache.table_view.shape[1] * cache.page : cache.capacity;
  AttentionSpec spec = AttentionSpec::parse("causal.br.kpad.gqa8x2.d64.f32.kv8");
  spec.dtype = q_type == ElementType::bf16 ? DType::bf16 : DType::f32;
  spec.kv_storage = cache.storage;
  spec.page_size = cache.page;
  reference::Problem problem;
  problem.spec = spec;
  problem.batch = B;
  problem.q_len = q_len;
  problem.kv_len = Lk;
  problem.scale = default_scale(kDim);
  problem.key_lengths = cache.lengths;
  problem.k.assign(size_t(B) * kKvHeads * Lk * kDim, 0.0);
  problem.v = problem.k;
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < kKvHeads; ++h) {
      for (int p = 0; p < cache.lengths[b]; ++p) {
        for (int d = 0; d < kDim; ++d) {
          const size_t at = ((size_t(b) * kKvHeads + h) * Lk + p) * kDim + d;
          problem.k[at] = cache.read(false, b, h, p, d);
          problem.v[at] = cache.read(true, b, h, p, d);
        }
      }
    }
  }
  // Queries stored in the call's type; the reference reads what was stored.
  const std::vector<float> q_values = random_values(size_t(B) * kHeads * q_len * kDim, 99);
  const int bytes = element_bytes(q_type);
  const DType q_dtype = spec.dtype;
  std::vector<unsigned char> q_data(q_values.size() * bytes), out_data(q_values.size() * bytes);
  for (size_t n = 0; n < q_values.size(); ++n) {
    problem.q.push_back(round_to_dtype(q_values[n], q_dtype));
    const float stored = static_cast<float>(problem.q.back());
    if (bytes == 4) {
      std::memcpy(&q_data[n * 4], &stored, 4);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &stored, 4);
      const uint16_t upper = static_cast<uint16_t>(bits >> 16);  // exact: stored is a bf16
      std::memcpy(&q_data[n * 2], &upper, 2);
    }
  }
  std::vector<int32_t> lengths(cache.lengths.begin(), cache.lengths.end());
  const TensorView tq = TensorView::contiguous(q_data.data(), q_type, {B, kHeads, q_len, kDim});
  const TensorView tout = TensorView::contiguous(out_data.data(), q_type, {B, kHeads, q_len, kDim});
  const TensorView tlengths = TensorView::contiguous(lengths.data(), ElementType::i32, {B});
  AttentionOptions o;
  o.mask = MaskKind::causal;
  o.alignment = MaskAlignment::bottom_right;
  o.key_lengths = &tlengths;
  o.k_scale = &cache.k_scale_view;
  o.v_scale = &cache.v_scale_view;
  if (cache.page) o.page_table = &cache.table_view;
  const Status status = attention(tq, cache.k_view, cache.v_view, tout, o);
  ASSERT_TRUE(status.ok()) << status.message;
  const std::vector<double> expected = reference::attention(problem).out;
  std::vector<double> actual;
  for (size_t n = 0; n < expected.size(); ++n) {
    actual.push_back(bytes == 4 ? reinterpret_cast<const float*>(out_data.data())[n]
                                : traits_of(DType::bf16).load(&out_data[n * 2]));
  }
  const Comparison result = compare_values(actual, expected, tolerance_for(q_dtype), "out");
  EXPECT_TRUE(result.ok) << result.first_failure << " (max error " << result.max_error << ")";
}

TEST(KvCache, PrefillThenDecodingStepsMatchTheReference) {
  for (KvStorage storage : {KvStorage::int8, KvStorage::fp8_e4m3}) {
    SCOPED_TRACE(to_string(storage));
    Cache cache(2, 80, 0, storage);
    ASSERT_TRUE(cache.append(37, 1).ok());
    expect_decoding_matches_reference(cache, 37, ElementType::f32);
    ASSERT_TRUE(cache.append(1, 2).ok());
    ASSERT_TRUE(cache.append(1, 3).ok());
    expect_decoding_matches_reference(cache, 1, ElementType::f32);
    expect_decoding_matches_reference(cache, 5, ElementType::f32);
  }
}

TEST(KvCache, APagedCacheMatchesTheReference) {
  for (KvStorage storage : {KvStorage::int8, KvStorage::fp8_e4m3}) {
    SCOPED_TRACE(to_string(storage));
    Cache cache(3, 64, 16, storage);
    ASSERT_TRUE(cache.append(21, 4).ok());
    ASSERT_TRUE(cache.append(1, 5).ok());
    expect_decoding_matches_reference(cache, 1, ElementType::bf16);
    expect_decoding_matches_reference(cache, 8, ElementType::bf16);
  }
}

// Values past 448 * scale are stored as +-448 * scale, never as a NaN code.
TEST(KvCache, Fp8ValuesPastTheRangeSaturate) {
  Cache cache(1, 4, 0, KvStorage::fp8_e4m3);
  std::vector<float> rows(kKvHeads * kDim, 0.0f);
  rows[0] = 500 * kFp8Scale;
  rows[1] = -1e30f;
  rows[2] = 448 * kFp8Scale;
  int32_t position = 2;
  const Status status = write_quantized_rows(
      TensorView::contiguous(rows.data(), ElementType::f32, {1, kKvHeads, 1, kDim}),
      TensorView::contiguous(&position, ElementType::i32, {1}), cache.k_view, cache.k_scale_view);
  ASSERT_TRUE(status.ok()) << status.message;
  const size_t row = 2 * kDim;
  EXPECT_EQ(uint8_t(cache.k[row + 0]), 0x7E);
  EXPECT_EQ(uint8_t(cache.k[row + 1]), 0xFE);
  EXPECT_EQ(uint8_t(cache.k[row + 2]), 0x7E);
  EXPECT_EQ(uint8_t(cache.k[row + 3]), 0x00);
}

// A bad write: the status names `field`, and cache and scales are as before.
void expect_rejected(Cache& cache, const TensorView& rows, std::vector<int32_t> positions,
                     const TensorView* table, const TensorView* scales, const std::string& field) {
  const std::vector<int8_t> k_before = cache.k;
  const std::vector<float> scale_before = cache.k_scale;
  const TensorView tpositions =
      TensorView::contiguous(positions.data(), ElementType::i32, {int64_t(positions.size())});
  const Status status = write_quantized_rows(rows, tpositions, cache.k_view,
                                             scales ? *scales : cache.k_scale_view, table);
  EXPECT_EQ(status.code, ErrorCode::invalid_argument) << field;
  EXPECT_EQ(status.message.rfind(field + ":", 0), 0u) << status.message;
  EXPECT_EQ(cache.k, k_before) << status.message;
  EXPECT_EQ(cache.k_scale, scale_before) << status.message;
}

TEST(KvCache, BadWritesAreNamedAndWriteNothing) {
  Cache contiguous(2, 40, 0), paged(2, 32, 16);
  ASSERT_TRUE(contiguous.append(3, 8).ok());
  ASSERT_TRUE(paged.append(3, 8).ok());
  std::vector<float> values = random_values(2 * kKvHeads * 4 * kDim, 9);
  const TensorView rows =
      TensorView::contiguous(values.data(), ElementType::f32, {2, kKvHeads, 4, kDim});
  expect_rejected(contiguous, rows, {3, -1}, nullptr, nullptr, "positions");
  expect_rejected(contiguous, rows, {3, 37}, nullptr, nullptr, "positions");  // past Lk = 40
  expect_rejected(contiguous, rows, {3}, nullptr, nullptr, "positions");
  expect_rejected(paged, rows, {3, 29}, &paged.table_view, nullptr, "positions");  // a full table
  paged.table[1 * 2 + 0] = -1;  // sequence 1's first page
  expect_rejected(paged, rows, {3, 3}, &paged.table_view, nullptr, "page_table");
  paged.table[1 * 2 + 0] = paged.table[0];  // shared with sequence 0 at the rows written
  expect_rejected(paged, rows, {3, 3}, &paged.table_view, nullptr, "page_table");
  std::vector<float> short_scales(2 * kKvHeads * 39);
  const TensorView bad_scales =
      TensorView::contiguous(short_scales.data(), ElementType::f32, {2, kKvHeads, 39});
  expect_rejected(contiguous, rows, {3, 3}, nullptr, &bad_scales, "scales");
  values[5] = NAN;
  expect_rejected(contiguous, rows, {3, 3}, nullptr, nullptr, "rows");
  std::vector<int32_t> ints(values.size());
  const TensorView int_rows =
      TensorView::contiguous(ints.data(), ElementType::i32, {2, kKvHeads, 4, kDim});
  expect_rejected(contiguous, int_rows, {3, 3}, nullptr, nullptr, "rows");

  Cache fp8(2, 40, 0, KvStorage::fp8_e4m3);
  ASSERT_TRUE(fp8.append(3, 8).ok());
  values[5] = 0.5f;
  expect_rejected(fp8, rows, {3, 37}, nullptr, nullptr, "positions");
  expect_rejected(fp8, rows, {3, 3}, nullptr, &bad_scales, "scales");  // kv8's shape
  std::vector<float> head_scales = {kFp8Scale, 0.0f};
  const TensorView zero_scale =
      TensorView::contiguous(head_scales.data(), ElementType::f32, {kKvHeads});
  expect_rejected(fp8, rows, {3, 3}, nullptr, &zero_scale, "scales");
  head_scales[1] = NAN;
  expect_rejected(fp8, rows, {3, 3}, nullptr, &zero_scale, "scales");
  std::vector<int16_t> halves(2 * kKvHeads * 40 * kDim);
  const TensorView f16_cache =
      TensorView::contiguous(halves.data(), ElementType::f16, {2, kKvHeads, 40, kDim});
  const TensorView tpositions = TensorView::contiguous(ints.data(), ElementType::i32, {2});
  const Status status =
      write_quantized_rows(rows, tpositions, f16_cache, fp8.k_scale_view, nullptr);
  EXPECT_EQ(status.message.rfind("cache:", 0), 0u) << status.message;
}

TEST(KvCache, AttentionNamesMissingOrStrayScales) {
  Cache cache(1, 16, 0);
  ASSERT_TRUE(cache.append(16, 10).ok());
  std::vector<float> q(kHeads * kDim), out(q.size(), 5.0f), kv_f32(kKvHeads * 16 * kDim);
  const TensorView tq = TensorView::contiguous(q.data(), ElementType::f32, {1, kHeads, 1, kDim});
  const TensorView tout =
      TensorView::contiguous(out.data(), ElementType::f32, {1, kHeads, 1, kDim});
  const TensorView kv =
      TensorView::contiguous(kv_f32.data(), ElementType::f32, {1, kKvHeads, 16, kDim});
  AttentionOptions none;
  Status status = attention(tq, cache.k_view, cache.v_view, tout, none);
  EXPECT_EQ(status.message.rfind("k_scale", 0), 0u) << status.message;
  AttentionOptions half;
  half.k_scale = &cache.k_scale_view;
  status = attention(tq, cache.k_view, cache.v_view, tout, half);
  EXPECT_EQ(status.message.rfind("v_scale", 0), 0u) << status.message;
  AttentionOptions stray;
  stray.k_scale = stray.v_scale = &cache.k_scale_view;
  status = attention(tq, kv, kv, tout, stray);
  EXPECT_EQ(status.message.rfind("k_scale", 0), 0u) << status.message;
  const TensorView short_scale =
      TensorView::contiguous(cache.k_scale.data(), ElementType::f32, {1, kKvHeads, 15});
  AttentionOptions wrong;
  wrong.k_scale = &short_scale;
  wrong.v_scale = &cache.v_scale_view;
  status = attention(tq, cache.k_view, cache.v_view, tout, wrong);
  EXPECT_EQ(status.message.rfind("k_scale", 0), 0u) << status.message;
  // An fp8 cache takes a scale per KV head, not kv8's per row.
  Cache fp8(1, 16, 0, KvStorage::fp8_e4m3);
  ASSERT_TRUE(fp8.append(16, 10).ok());
  AttentionOptions per_row;
  per_row.k_scale = &cache.k_scale_view;
  per_row.v_scale = &cache.v_scale_view;
  status = attention(tq, fp8.k_view, fp8.v_view, tout, per_row);
  EXPECT_EQ(status.message.rfind("k_scale: expected", 0), 0u) << status.message;
  for (float value : out) EXPECT_EQ(value, 5.0f);
}

}  // namespace
}  // namespace attnforge::testing
