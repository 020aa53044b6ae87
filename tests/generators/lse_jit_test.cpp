// `.lse`: every x86 form returns each row's log-sum-exp next to its output,
// against the double reference (+inf exactly for a row that sees no key),
// and forms that cannot are refused by name.
#include <gtest/gtest.h>

#include <string>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "schedules/schedule_check.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"

namespace attnforge::testing {
namespace {

// Odd sizes, L = 1, Lq != Lk; batch 3 has a row that sees no key where the
// spec pads keys.
constexpr std::initializer_list<CaseShape> kShapes = {
    {1, 1, 1}, {3, 7, 33}, {2, 40, 19}, {3, 1, 77}};

void expect_every_form_returns_lse(const char* spec_text, std::vector<std::string> extra = {}) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  std::vector<std::string> schedules = every_x86_form(spec);
  for (const std::string& preset : extra) {
    if (!schedules::check(schedules::load_preset(preset), spec, kernel_target())) {
      schedules.push_back(preset);
    }
  }
  for (const std::string& schedule : schedules) {
    expect_jit_matches_reference(spec, schedule, kShapes, {Layout::bhld, Layout::blhd}, 3);
  }
}

TEST(LseJit, EveryFormReturnsTheRowsLse) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  expect_every_form_returns_lse("causal.br.kpad.gqa4x2.d32.f32.lse");
  expect_every_form_returns_lse("window5_2.alibi.softcap20.mha2.d16.f32.lse");
  expect_every_form_returns_lse("full.kpad.mqa4.d32.bf16.lse", {"online_bf16_avx512"});
  expect_every_form_returns_lse("causal.br.kpad.gqa4x2.d32.f16.kv8.lse",
                                {preset_for("decode_int16")});
}

// Every CUDA form returns lse: the SIMT ones (sampled_cuda_schedules_test
// runs them) and the tensor-core one (mma_online_jit_test runs it emulated),
// bf16 included.
TEST(LseJit, EveryCudaFormTakesLse) {
  const Halide::Target cuda("host-cuda-cuda_capability_80");
  for (const char* text : {"causal.gqa4x2.d64.f16.lse", "causal.gqa4x2.d64.bf16.lse"}) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    const auto misfit = schedules::check(schedules::load_preset("online_mma_cuda"), spec, cuda);
    EXPECT_FALSE(misfit) << text << ": " << misfit->what();
  }
  const AttentionSpec f16 = AttentionSpec::parse("causal.gqa4x2.d64.f16.lse");
  EXPECT_FALSE(schedules::check(schedules::load_preset("online_cuda"), f16, cuda));
}

TEST(LseJit, TheSpecTokenRoundTrips) {
  const AttentionSpec spec = AttentionSpec::parse("causal.gqa4x2.d64.f32.weights.lse");
  EXPECT_TRUE(spec.return_lse && spec.return_weights);
  EXPECT_EQ(spec.to_string(), "causal.gqa4x2.d64.f32.weights.lse");
  EXPECT_THROW(AttentionSpec::parse("causal.gqa4x2.d64.f32.lse.weights"), SpecError);
}

}  // namespace
}  // namespace attnforge::testing
