// The tensor-core form (online_mma) run on the CPU: the Generator with its
// mma and lane-group shuffles emulated as the PTX ISA lays them out, against
// the double reference on every mask, GQA/MQA, key padding with a zero
// length, L = 1 and lengths that are not multiples of 16 or of a key block;
// with .lse, each row's log-sum-exp too.
#include <gtest/gtest.h>

#include "tests/support/jit_reference.h"
#include "tests/support/mma_schedule.h"

namespace attnforge {
namespace {

using testing::CaseShape;
using testing::expect_jit_matches_reference;
using testing::Layout;
using testing::mma_schedule;

struct MmaCase {
  const char* spec;
  int query_tile, key_block;
};

class MmaOnlineOnTheCpu : public ::testing::TestWithParam<MmaCase> {};

TEST_P(MmaOnlineOnTheCpu, MatchesTheReference) {
  const MmaCase& c = GetParam();
  // B3 gives one sequence a key length of 0 where the spec pads keys.
  expect_jit_matches_reference(
      AttentionSpec::parse(c.spec), mma_schedule(c.query_tile, c.key_block, 1),
      {{1, 1, 1}, {3, 19, 37}, {1, 40, 9}, {1, 33, 130}}, {Layout::bhld, Layout::blhd}, 5);
}

INSTANTIATE_TEST_SUITE_P(Masks, MmaOnlineOnTheCpu,
                         ::testing::Values(MmaCase{"full.mha2.d64.f16", 16, 32},
                                           MmaCase{"full.mha2.d64.bf16", 32, 32},
                                           MmaCase{"causal.mha2.d32.f16", 16, 64},
                                           MmaCase{"causal.br.gqa4x2.d64.bf16", 16, 32},
                                           MmaCase{"window9_3.br.mqa2.d32.f16", 32, 32},
                                           MmaCase{"causal.kpad.alibi.mha2.d64.bf16", 16, 64},
                                           MmaCase{"full.bias.gqa4x2.d64.f16", 16, 32},
                                           MmaCase{"causal.br.kpad.mha2.d128.f16", 16, 32},
                                           MmaCase{"full.kpad.mha1.d96.bf16", 16, 32},
                                           MmaCase{"window.br.softcap30.gqa4x2.d64.f16", 16, 32},
                                           MmaCase{"causal.kpad.softcap5.mha2.d64.bf16", 32, 32},
                                           // Each row's lse too, +inf where it sees no key.
                                           MmaCase{"causal.br.kpad.gqa4x2.d64.bf16.lse", 32, 64},
                                           MmaCase{"window9_3.alibi.mha2.d32.f16.lse", 16, 32}));

}  // namespace
}  // namespace attnforge
