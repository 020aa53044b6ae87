// Packed variable-length batches through the runtime: sequences of mixed
// lengths concatenated along L, described by cu_seqlens offsets. Each
// sequence's rows of the packed output match the double reference of that
// sequence alone (masks and ALiBi aligned per sequence); bad offsets are a
// clear error with nothing written.
#include <HalideBuffer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/src/packed_staging.h"
#include "tensor_views.h"

namespace attnforge::testing {
namespace {

using Floats = Halide::Runtime::Buffer<float>;

// One packed call over the cases of `lengths` (Lq, Lk per sequence), in
// FlashAttention's [total, H, D] memory viewed as [1, H, total, D].
struct PackedCall {
  PackedCall(const AttentionSpec& spec, const std::vector<std::pair<int, int>>& lengths) {
    const int h = spec.heads, h_kv = spec.kv_heads, d = spec.head_dim;
    q_offsets.push_back(0);
    k_offsets.push_back(0);
    for (size_t s = 0; s < lengths.size(); ++s) {
      cases.push_back(
          std::make_unique<AttentionCase>(spec, CaseShape{1, lengths[s].first, lengths[s].second},
                                          CaseOptions{.seed = static_cast<uint32_t>(s + 1)}));
      q_offsets.push_back(q_offsets.back() + lengths[s].first);
      k_offsets.push_back(k_offsets.back() + lengths[s].second);
    }
    const int total_q = q_offsets.back(), total_k = k_offsets.back();
    q.resize(size_t(total_q) * h * d);
    k.resize(size_t(total_k) * h_kv * d);
    v.resize(k.size());
    out.assign(q.size(), NAN);
    for (size_t s = 0; s < cases.size(); ++s) {
      KernelArguments& a = cases[s]->arguments();
      copy_rows(Floats(*a.q), q, q_offsets[s], h, d);
      copy_rows(Floats(*a.k), k, k_offsets[s], h_kv, d);
      copy_rows(Floats(*a.v), v, k_offsets[s], h_kv, d);
    }
    auto packed = [d](std::vector<float>& data, int heads, int total) {
      return TensorView::strided(data.data(), ElementType::f32, {1, heads, total, d},
                                 {int64_t(total) * heads * d, d, int64_t(heads) * d, 1});
    };
    tq = packed(q, h, total_q);
    tk = packed(k, h_kv, total_k);
    tv = packed(v, h_kv, total_k);
    tout = packed(out, h, total_q);
    const int64_t count = static_cast<int64_t>(q_offsets.size());
    cu_q = TensorView::contiguous(q_offsets.data(), ElementType::i32, {count});
    cu_k = TensorView::contiguous(k_offsets.data(), ElementType::i32, {count});
    options = mask_options(spec);
    if (spec.bias == BiasKind::alibi) {  // the same slopes in every case
      slopes = view_of(*cases[0]->arguments().alibi_slopes);
      options.alibi_slopes = &slopes;
    }
    options.cu_seqlens_q = &cu_q;
    options.cu_seqlens_k = &cu_k;
  }

  // Rows (i, h, d) of a case's (d, i, h, 0) buffer into packed [total][heads][D] memory.
  static void copy_rows(const Floats& from, std::vector<float>& to, int first, int heads, int d) {
    for (int i = 0; i < from.dim(1).extent(); ++i)
      for (int h = 0; h < heads; ++h)
        for (int e = 0; e < d; ++e) to[(size_t(first + i) * heads + h) * d + e] = from(e, i, h, 0);
  }

  // Copies each sequence's rows of the packed output into its case and compares.
  void expect_matches_reference(const AttentionSpec& spec) {
    for (size_t s = 0; s < cases.size(); ++s) {
      Floats case_out(*cases[s]->arguments().out);
      for (int i = 0; i < case_out.dim(1).extent(); ++i)
        for (int h = 0; h < spec.heads; ++h)
          for (int e = 0; e < spec.head_dim; ++e)
            case_out(e, i, h, 0) =
                out[(size_t(q_offsets[s] + i) * spec.heads + h) * spec.head_dim + e];
      Comparison result = cases[s]->compare();
      EXPECT_TRUE(result.ok) << spec.to_string() << " sequence " << s << ": "
                             << result.first_failure;
    }
  }

  Status run() { return attention(tq, tk, tv, tout, options); }

  std::vector<std::unique_ptr<AttentionCase>> cases;
  std::vector<int32_t> q_offsets, k_offsets;
  std::vector<float> q, k, v, out;
  TensorView tq, tk, tv, tout, cu_q, cu_k, slopes;
  AttentionOptions options;
};

TEST(PackedBatch, PrefillOfMixedLengthsMatchesEachSequenceAlone) {
  const AttentionSpec spec = AttentionSpec::parse("causal.gqa8x2.d64.f32");
  PackedCall call(spec, {{37, 37}, {1, 1}, {130, 130}, {0, 0}, {64, 64}, {5, 5}, {90, 90}, {2, 2}});
  Status status = call.run();
  ASSERT_TRUE(status.ok()) << status.message;
  call.expect_matches_reference(spec);
}

TEST(PackedBatch, DecodeAndChunksAlignBottomRightPerSequence) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.alibi.mha2.d32.f32");
  PackedCall call(spec, {{1, 40}, {7, 19}, {1, 1}, {16, 100}, {3, 3}});
  Status status = call.run();
  ASSERT_TRUE(status.ok()) << status.message;
  call.expect_matches_reference(spec);
  KernelChoice choice;
  ASSERT_TRUE(choose_kernel(call.tq, call.tk, call.tv, call.tout, call.options, &choice).ok());
  EXPECT_EQ(choice.spec, "causal.br.alibi.mha2.d32.f32");
}

// Each sequence runs the kernel of its own shape, on dense copies of its K and
// V rows where its keys are read 256 times or more (130, 64 and 200 queries
// here, not 63: 8 query heads over 2), else on the packed rows themselves. Its
// output is bit for bit that of the sequence in tensors of its own, and gaps
// between the output's rows are never written.
TEST(PackedBatch, EachSequenceEqualsItsOwnRunAndGapsInOutAreUntouched) {
  const AttentionSpec spec = AttentionSpec::parse("causal.gqa8x2.d64.f32");
  const int h = spec.heads, h_kv = spec.kv_heads, d = spec.head_dim, gap = 3;
  const std::vector<std::pair<int, int>> lengths = {{130, 130}, {63, 63}, {64, 64}, {200, 200}};
  PackedCall call(spec, lengths);
  const int total = call.q_offsets.back(), row = h * d + gap;
  constexpr float kGap = 7.0f;
  std::vector<float> out(size_t(total) * row, kGap);
  call.tout = TensorView::strided(out.data(), ElementType::f32, {1, h, total, d},
                                  {int64_t(total) * row, d, row, 1});
  Status status = call.run();
  ASSERT_TRUE(status.ok()) << status.message;
  for (int i = 0; i < total; ++i)
    for (int e = h * d; e < row; ++e) ASSERT_EQ(out[size_t(i) * row + e], kGap) << "row " << i;

  for (size_t s = 0; s < lengths.size(); ++s) {
    const int first = call.q_offsets[s], length = lengths[s].first;
    auto dense = [&](const std::vector<float>& packed, int heads) {
      std::vector<float> rows(size_t(length) * heads * d);
      for (int i = 0; i < length; ++i)
        for (int j = 0; j < heads; ++j)
          for (int e = 0; e < d; ++e)
            rows[(size_t(j) * length + i) * d + e] =
                packed[(size_t(first + i) * heads + j) * d + e];
      return rows;
    };
    std::vector<float> q = dense(call.q, h), k = dense(call.k, h_kv), v = dense(call.v, h_kv),
                       alone(q.size(), NAN);
    status = attention(TensorView::contiguous(q.data(), ElementType::f32, {1, h, length, d}),
                       TensorView::contiguous(k.data(), ElementType::f32, {1, h_kv, length, d}),
                       TensorView::contiguous(v.data(), ElementType::f32, {1, h_kv, length, d}),
                       TensorView::contiguous(alone.data(), ElementType::f32, {1, h, length, d}),
                       mask_options(spec));
    ASSERT_TRUE(status.ok()) << status.message;
    for (int i = 0; i < length; ++i)
      for (int j = 0; j < h; ++j)
        for (int e = 0; e < d; ++e) {
          ASSERT_EQ(out[size_t(first + i) * row + j * d + e],
                    alone[(size_t(j) * length + i) * d + e])
              << "sequence " << s << " query " << i << " head " << j << " element " << e;
        }
  }
}

// The staging copy, for 2-byte elements: every element of a view with gaps
// between rows and heads, into dense memory and back into another such view.
TEST(PackedStaging, CopiesEveryElementBetweenAnyStrides) {
  const int h = 3, length = 5, d = 4, row = h * d + 2;
  std::vector<uint16_t> packed(size_t(length) * row + 1), dense(size_t(h) * length * d, 0),
      back(packed.size(), 0xFFFF);
  for (size_t n = 0; n < packed.size(); ++n) packed[n] = static_cast<uint16_t>(n);
  const TensorView from = TensorView::strided(packed.data() + 1, ElementType::bf16,
                                              {1, h, length, d}, {length * row, d, row, 1});
  TensorView to = runtime::dense_view(from, dense.data());
  EXPECT_FALSE(runtime::is_dense(from));
  EXPECT_TRUE(runtime::is_dense(to));
  runtime::copy_elements(from, to);
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < length; ++i)
      for (int e = 0; e < d; ++e)
        ASSERT_EQ(dense[(size_t(j) * length + i) * d + e], packed[1 + i * row + j * d + e]);
  TensorView again = from;
  again.data = back.data() + 1;
  runtime::copy_elements(to, again);
  for (size_t n = 0; n < back.size(); ++n) {
    const bool gap = n == 0 || (n - 1) % row >= size_t(h * d);
    EXPECT_EQ(back[n], gap ? 0xFFFF : packed[n]) << n;
  }
}

// Which sequences get dense copies: keys read 256 times or more (query rows x
// query heads per KV head), rows apart, no broadcast, in CPU memory.
TEST(PackedStaging, CopiesKeysAndValuesOnlyWhereTheyAreReadOftenAndLieApart) {
  const int h = 8, h_kv = 2, d = 4, total = 64;
  std::vector<float> q(size_t(total) * h * d), k(size_t(total) * h_kv * d, 1.0f), v(k.size(), 2.0f);
  auto packed = [&](std::vector<float>& data, int heads, int length) {
    return TensorView::strided(data.data(), ElementType::f32, {1, heads, length, d},
                               {int64_t(total) * heads * d, d, int64_t(heads) * d, 1});
  };
  auto staged = [](const TensorView& tq, const TensorView& tk, const TensorView& tv) {
    const runtime::StagedKeysAndValues s(tq, tk, tv);
    const bool copied = s.k.data != tk.data;
    if (copied) {
      EXPECT_TRUE(runtime::is_dense(s.k) && runtime::is_dense(s.v));
      EXPECT_EQ(static_cast<const float*>(s.k.data)[0], 1.0f);
      EXPECT_EQ(static_cast<const float*>(s.v.data)[0], 2.0f);
    }
    return copied;
  };
  EXPECT_TRUE(staged(packed(q, h, 64), packed(k, h_kv, 64), packed(v, h_kv, 64)));   // 256 reads
  EXPECT_FALSE(staged(packed(q, h, 63), packed(k, h_kv, 63), packed(v, h_kv, 63)));  // 252
  const TensorView dense_k = TensorView::contiguous(k.data(), ElementType::f32, {1, h_kv, 64, d});
  const TensorView dense_v = TensorView::contiguous(v.data(), ElementType::f32, {1, h_kv, 64, d});
  EXPECT_FALSE(staged(packed(q, h, 64), dense_k, dense_v));
  TensorView broadcast = packed(k, h_kv, 64);
  broadcast.strides[1] = 0;
  EXPECT_FALSE(staged(packed(q, h, 64), broadcast, packed(v, h_kv, 64)));
  TensorView on_gpu = packed(k, h_kv, 64);
  on_gpu.device = Device::cuda;
  EXPECT_FALSE(staged(packed(q, h, 64), on_gpu, packed(v, h_kv, 64)));
}

TEST(PackedBatch, BadOffsetsAreNamedAndOutIsUntouched) {
  const AttentionSpec spec = AttentionSpec::parse("causal.gqa8x2.d64.f32");
  struct Bad {
    const char* expected;
    void (*spoil)(PackedCall&);
  };
  const Bad cases[] = {
      {"cu_seqlens_q: [0] is 1", [](PackedCall& c) { c.q_offsets[0] = 1; }},
      {"cu_seqlens_q: [2] is 3, below [1] = 5", [](PackedCall& c) { c.q_offsets[2] = 3; }},
      {"cu_seqlens_k: [3] is 19; expected total_k", [](PackedCall& c) { c.k_offsets[3] = 19; }},
      {"cu_seqlens_k: sequence 1 has 4 queries but no key",
       [](PackedCall& c) { c.k_offsets[1] = c.k_offsets[2]; }},
      {"cu_seqlens_k: null", [](PackedCall& c) { c.options.cu_seqlens_k = nullptr; }},
      {"cu_seqlens_k: expected shape [S + 1]", [](PackedCall& c) { c.cu_k.shape[0] = 3; }},
      {"cu_seqlens_q: expected element type i32",
       [](PackedCall& c) { c.cu_q.type = ElementType::f32; }},
      {"key_lengths: not with cu_seqlens_q",
       [](PackedCall& c) {
         static int32_t length = 3;
         static TensorView lengths = TensorView::contiguous(&length, ElementType::i32, {1});
         c.options.key_lengths = &lengths;
       }},
      {"q: a packed batch lies along L", [](PackedCall& c) {
         c.tq.shape[0] = c.tk.shape[0] = c.tv.shape[0] = c.tout.shape[0] = 2;
         c.tq.shape[2] = c.tout.shape[2] = 4;
         c.tk.shape[2] = c.tv.shape[2] = 4;
       }}};
  for (const Bad& bad : cases) {
    PackedCall call(spec, {{5, 7}, {4, 6}, {3, 7}});
    bad.spoil(call);
    Status status = call.run();
    EXPECT_EQ(status.code, ErrorCode::invalid_argument) << bad.expected;
    EXPECT_EQ(status.message.rfind(bad.expected, 0), 0u) << status.message;
    for (float x : call.out) ASSERT_TRUE(std::isnan(x)) << bad.expected;
  }
}

}  // namespace
}  // namespace attnforge::testing
