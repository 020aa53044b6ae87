// The key bounds that read no key length (one-warp blocks skip by them) hold
// every key the bounds with key lengths hold, for each length from 0 to Lk.
#include <gtest/gtest.h>

#include "algorithm/attention_terms.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

class KeyRangeAnyLength : public ::testing::TestWithParam<const char*> {};

TEST_P(KeyRangeAnyLength, HoldsTheRangeOfEveryKeyLength) {
  const AttentionSpec spec = AttentionSpec::parse(GetParam());
  constexpr int kQueries = 13, kKeys = 29;
  Halide::Var first("first"), last("last"), b("b");
  AttentionInputs in;
  in.q_len = kQueries;
  in.kv_len = kKeys;
  in.key_lengths(b) = b;  // batch b has b valid keys
  const AttentionTerms terms(spec, in);
  Halide::Func range("range");
  range(first, last, b) = {terms.key_range_begin(first, b), terms.key_range_end(last, b),
                           terms.key_range_begin_any_length(first),
                           terms.key_range_end_any_length(last)};
  Halide::Realization r = range.realize({kQueries, kQueries, kKeys + 1});
  Halide::Buffer<int32_t> begin = r[0], end = r[1], begin_any = r[2], end_any = r[3];
  int nonempty = 0;
  for (int length = 0; length <= kKeys; ++length) {
    for (int f = 0; f < kQueries; ++f) {
      for (int l = f; l < kQueries; ++l) {
        if (end(f, l, length) <= begin(f, l, length)) continue;  // no key to hold
        ++nonempty;
        EXPECT_LE(begin_any(f, l, length), begin(f, l, length)) << length << " " << f << " " << l;
        EXPECT_GE(end_any(f, l, length), end(f, l, length)) << length << " " << f << " " << l;
      }
    }
  }
  EXPECT_GT(nonempty, 100);
}

INSTANTIATE_TEST_SUITE_P(Masks, KeyRangeAnyLength,
                         ::testing::Values("causal.kpad.mha2.d32.f32",
                                           "causal.br.kpad.mha2.d32.f32",
                                           "window5_3.kpad.mha2.d32.f32",
                                           "window5_3.br.kpad.mha2.d32.f32",
                                           "full.kpad.mha2.d32.f32"),
                         [](const auto& info) { return testing::test_name_of(info.param); });

}  // namespace
}  // namespace attnforge
