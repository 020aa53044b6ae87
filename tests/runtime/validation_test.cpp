// Every bad argument is an invalid_argument Status whose message names the
// argument and says what was expected and given; out is never written.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "attnforge/attention.h"

namespace attnforge {
namespace {

// A valid causal GQA call (H 8, H_kv 2, D 64, B 2, Lq 5, Lk 7) that each case breaks once.
struct Call {
  std::vector<float> q = std::vector<float>(2 * 8 * 5 * 64, 0.5f);
  std::vector<float> kv = std::vector<float>(2 * 2 * 7 * 64, 0.25f);
  std::vector<float> out = std::vector<float>(2 * 8 * 5 * 64, 7.0f);
  std::vector<int32_t> lengths = {7, 3};
  std::vector<float> slopes = std::vector<float>(8, 0.5f);
  std::vector<float> bias = std::vector<float>(5 * 7, 0.0f);
  TensorView tq = TensorView::contiguous(q.data(), ElementType::f32, {2, 8, 5, 64});
  TensorView tk = TensorView::contiguous(kv.data(), ElementType::f32, {2, 2, 7, 64});
  TensorView tv = tk;
  TensorView tout = TensorView::contiguous(out.data(), ElementType::f32, {2, 8, 5, 64});
  TensorView tlengths = TensorView::contiguous(lengths.data(), ElementType::i32, {2});
  TensorView tslopes = TensorView::contiguous(slopes.data(), ElementType::f32, {8});
  TensorView tbias = TensorView::contiguous(bias.data(), ElementType::f32, {1, 1, 5, 7});
  TensorView tweights;
  AttentionOptions options;

  Call() { options.mask = MaskKind::causal; }
  Status run() { return attention(tq, tk, tv, tout, options); }
  bool out_untouched() const {
    for (float x : out) {
      if (x != 7.0f) return false;
    }
    return true;
  }
};

// A valid causal bottom-right GQA call (H 8, H_kv 2, D 64, B 2, Lq 1) on a
// paged cache of 3 pages of 16 positions, whose table names 2 pages per
// sequence; sequence 1's 3 keys use one page, and its second entry is -1.
struct PagedCall {
  std::vector<float> q = std::vector<float>(2 * 8 * 1 * 64, 0.5f);
  std::vector<float> kv = std::vector<float>(3 * 2 * 16 * 64, 0.25f);
  std::vector<float> out = std::vector<float>(2 * 8 * 1 * 64, 7.0f);
  std::vector<int32_t> lengths = {20, 3};
  std::vector<int32_t> table = {2, 0, 1, -1};
  TensorView tq = TensorView::contiguous(q.data(), ElementType::f32, {2, 8, 1, 64});
  TensorView tk = TensorView::contiguous(kv.data(), ElementType::f32, {3, 2, 16, 64});
  TensorView tv = tk;
  TensorView tout = TensorView::contiguous(out.data(), ElementType::f32, {2, 8, 1, 64});
  TensorView tlengths = TensorView::contiguous(lengths.data(), ElementType::i32, {2});
  TensorView ttable = TensorView::contiguous(table.data(), ElementType::i32, {2, 2});
  AttentionOptions options;

  PagedCall() {
    options.mask = MaskKind::causal;
    options.alignment = MaskAlignment::bottom_right;
    options.key_lengths = &tlengths;
    options.page_table = &ttable;
  }
  Status run() { return attention(tq, tk, tv, tout, options); }
  bool out_untouched() const {
    for (float x : out) {
      if (x != 7.0f) return false;
    }
    return true;
  }
};

template <typename CallType = Call>
struct BadCase {
  const char* what;
  std::function<void(CallType&)> breaks;
  std::vector<const char*> message_has;
};

TEST(Validation, TheUnbrokenCallRuns) {
  Call call;
  Status status = call.run();
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_FALSE(call.out_untouched());
}

// Each case breaks a valid call once: the call fails, names the argument and
// leaves out unwritten.
template <typename CallType = Call>
void expect_each_rejected(const std::vector<BadCase<CallType>>& cases) {
  for (const BadCase<CallType>& bad : cases) {
    CallType call;
    bad.breaks(call);
    Status status = call.run();
    EXPECT_EQ(status.code, ErrorCode::invalid_argument) << bad.what << ": " << status.message;
    for (const char* part : bad.message_has) {
      EXPECT_NE(status.message.find(part), std::string::npos)
          << bad.what << ": '" << status.message << "' lacks '" << part << "'";
    }
    EXPECT_TRUE(call.out_untouched()) << bad.what;
  }
}

TEST(Validation, BadLayoutsAndAliasesAreNamedAndOutIsUntouched) {
  expect_each_rejected({
      {"q rank 3", [](Call& c) { c.tq.rank = 3; }, {"q:", "rank 4", "[B, H, Lq, D]", "rank 3"}},
      {"rank 5",
       [](Call& c) {
         c.tq = TensorView::contiguous(c.q.data(), ElementType::f32, {1, 2, 8, 5, 64});
       },
       {"q:", "rank 4", "rank 5"}},
      {"strides not matching the extents",
       [](Call& c) {
         c.tq = TensorView::strided(c.q.data(), ElementType::f32, {2, 8, 5, 64}, {2560, 320, 64});
       },
       {"q:", "4 extents", "different number of strides"}},
      {"out with a zero stride",
       [](Call& c) { c.tout.strides[1] = 0; },
       {"out:", "strides [2560, 0, 64, 1]", "several elements to one address"}},
      {"out with overlapping rows",
       [](Call& c) { c.tout.strides[2] = 32; },
       {"out:", "several elements to one address"}},
      {"out is q", [](Call& c) { c.tout.data = c.q.data(); }, {"out:", "overlaps q"}},
      {"out inside k",
       [](Call& c) {
         c.tout.data = c.kv.data() + 64;
         c.tout.shape[0] = 1;
         c.tout.shape[1] = 1;
         c.tout.shape[2] = 1;
         c.tq.shape[0] = c.tq.shape[1] = c.tq.shape[2] = 1;
         c.tk.shape[0] = c.tv.shape[0] = 1;
         c.tk.shape[1] = c.tv.shape[1] = 1;
       },
       {"out:", "overlaps k"}},
      {"weights in out's memory",
       [](Call& c) {
         c.tweights = TensorView::contiguous(c.out.data(), ElementType::f32, {2, 8, 5, 7});
         c.options.weights = &c.tweights;
       },
       {"out:", "overlaps weights"}},
  });
}

TEST(Validation, BadShapesAndTypesAreNamedAndOutIsUntouched) {
  expect_each_rejected({
      {"k head dim",
       [](Call& c) {
         c.tk.shape[3] = 32;
         c.tv = c.tk;
       },
       {"k:", "[2, 2, 7, 64]", "[2, 2, 7, 32]"}},
      {"v differs from k", [](Call& c) { c.tv.shape[2] = 6; }, {"v:", "as k", "[2, 2, 6, 64]"}},
      {"out shape",
       [](Call& c) { c.tout.shape[2] = 4; },
       {"out:", "[2, 8, 5, 64]", "[2, 8, 4, 64]"}},
      {"batch mismatch",
       [](Call& c) {
         c.tk.shape[0] = 1;
         c.tv = c.tk;
       },
       {"k:", "[B, H_kv, Lk, D]"}},
      {"k element type", [](Call& c) { c.tk.type = ElementType::f16; }, {"k:", "f32", "f16"}},
      {"q integer", [](Call& c) { c.tq.type = ElementType::i32; }, {"q:", "i32"}},
      {"innermost stride", [](Call& c) { c.tq.strides[3] = 2; }, {"q:", "innermost stride", "2"}},
      {"negative stride", [](Call& c) { c.tk.strides[1] = -64; }, {"k:", "stride 1", "-64"}},
      {"null data", [](Call& c) { c.tv.data = nullptr; }, {"v:", "null"}},
      {"H not divisible",
       [](Call& c) {
         c.tk.shape[1] = 3;
         c.tv = c.tk;
       },
       {"k:", "H_kv = 3", "H = 8"}},
      {"overflowing size",
       [](Call& c) { c.tq.shape[2] = int64_t(1) << 40; },
       {"q:", "dimension 2", "1099511627776"}},
      {"overflowing span",
       [](Call& c) { c.tq.strides[0] = int64_t(1) << 30; },
       {"q:", "spans more than", "the most kernels address"}},
      // Found by fuzzing: terms near 2^62 each once overflowed the span in bytes.
      {"span terms near 2^62",
       [](Call& c) {
         for (int n = 0; n < 3; ++n) c.tk.shape[n] = c.tk.strides[n] = (int64_t(1) << 31) - 1;
         c.tv = c.tk;
       },
       {"k:", "spans more than"}},
  });
}

TEST(Validation, BadExtentsLengthsAndOptionsAreNamedAndOutIsUntouched) {
  expect_each_rejected({
      {"negative extent", [](Call& c) { c.tout.shape[0] = -2; }, {"out:", "dimension 0", "-2"}},
      {"no keys",
       [](Call& c) {
         c.tk.shape[2] = 0;
         c.tv = c.tk;
       },
       {"k:", "Lk is 0"}},
      {"device mismatch",
       [](Call& c) { c.tout.device = Device::cuda; },
       {"out:", "on cuda", "q is on cpu"}},
      {"key length too long",
       [](Call& c) {
         c.lengths[1] = 8;
         c.options.key_lengths = &c.tlengths;
       },
       {"key_lengths:", "[1] is 8", "0..Lk (7)"}},
      {"negative key length",
       [](Call& c) {
         c.lengths[0] = -1;
         c.options.key_lengths = &c.tlengths;
       },
       {"key_lengths:", "[0] is -1"}},
      {"key lengths type",
       [](Call& c) {
         c.tlengths.type = ElementType::f32;
         c.options.key_lengths = &c.tlengths;
       },
       {"key_lengths:", "i32"}},
      {"key lengths count",
       [](Call& c) {
         c.tlengths.shape[0] = 1;
         c.options.key_lengths = &c.tlengths;
       },
       {"key_lengths:", "[B] = [2]", "[1]"}},
      {"bias not broadcastable",
       [](Call& c) {
         c.tbias.shape[3] = 6;
         c.options.bias = &c.tbias;
       },
       {"bias:", "[B or 1, H or 1, Lq, Lk]", "[1, 1, 5, 6]"}},
      {"bias with alibi",
       [](Call& c) {
         c.options.bias = &c.tbias;
         c.options.alibi_slopes = &c.tslopes;
       },
       {"bias, alibi_slopes"}},
      {"alibi length",
       [](Call& c) {
         c.tslopes.shape[0] = 3;
         c.options.alibi_slopes = &c.tslopes;
       },
       {"alibi_slopes:", "[H] = [8]", "[3]"}},
      {"weights shape",
       [](Call& c) { c.options.weights = &c.tout; },
       {"weights:", "[B, H, Lq, Lk]", "[2, 8, 5, 7]"}},
      {"window without its mask",
       [](Call& c) { c.options.window_left = 4; },
       {"window_left", "(4, 0)"}},
      {"negative window",
       [](Call& c) {
         c.options.mask = MaskKind::sliding_window;
         c.options.window_right = -1;
       },
       {"window_left, window_right", "(0, -1)"}},
      {"infinite scale", [](Call& c) { c.options.scale = INFINITY; }, {"scale:", "inf"}},
  });
}

TEST(Validation, TheUnbrokenPagedCallRuns) {
  PagedCall call;
  Status status = call.run();
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_FALSE(call.out_untouched());
}

TEST(Validation, BadPageTablesAreNamedAndOutIsUntouched) {
  using Paged = BadCase<PagedCall>;
  expect_each_rejected<PagedCall>({
      Paged{"page out of range",
            [](PagedCall& c) { c.table[1] = 3; },
            {"page_table:", "[0, 1] is 3", "0..2 (num_pages - 1)"}},
      Paged{"negative page in use",
            [](PagedCall& c) { c.table[2] = -1; },
            {"page_table:", "[1, 0] is -1", "3 keys of sequence 1"}},
      Paged{"table too short for the length",
            [](PagedCall& c) { c.lengths[0] = 33; },
            {"key_lengths:", "[0] is 33", "max_pages x page_size = 32"}},
      Paged{"no key lengths",
            [](PagedCall& c) { c.options.key_lengths = nullptr; },
            {"page_table:", "needs key_lengths"}},
      Paged{"table rows",
            [](PagedCall& c) { c.ttable.shape[0] = 1; },
            {"page_table:", "[B, max_pages] = [2, >= 1]", "[1, 2]"}},
      Paged{"table type",
            [](PagedCall& c) { c.ttable.type = ElementType::f32; },
            {"page_table:", "i32"}},
      Paged{"v pages differ from k",
            [](PagedCall& c) { c.tv.shape[2] = 8; },
            {"v:", "[num_pages, H_kv, page_size, D] (as k)", "[3, 2, 8, 64]"}},
  });
}

}  // namespace
}  // namespace attnforge
