// What the tuner runs a candidate on, for an 8-bit cache (contiguous and
// paged): int8 rows and their scales that the naive kernel and a decoding
// schedule read to the same output, as the checker compares them.
#include "autotune/tuning_inputs.h"

#include <gtest/gtest.h>

#include "autotune/checker.h"
#include "generators/jit_attention.h"
#include "tests/support/target_presets.h"

namespace attnforge::autotune {
namespace {

TEST(TuningInputs, AnEightBitCacheRunsTheNaiveKernelAndADecodingSchedule) {
  const Halide::Target target = testing::kernel_target();
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  for (const char* text :
       {"causal.br.kpad.gqa8x2.d64.bf16.kv8", "causal.br.kpad.page16.gqa8x2.d64.f32.kv8",
        "causal.br.kpad.gqa8x2.d64.bf16.kvfp8", "causal.br.kpad.page16.gqa8x2.d64.f32.kvfp8"}) {
    SCOPED_TRACE(text);
    const AttentionSpec spec = AttentionSpec::parse(text);
    const bool fp8 = spec.kv_storage == KvStorage::fp8_e4m3;
    TuningInputs inputs(spec, {2, 3, 150}, 5);
    ASSERT_EQ(inputs.arguments().k->type,
              halide_type_t(fp8 ? halide_type_uint : halide_type_int, 8));
    ASSERT_NE(inputs.arguments().k_scale, nullptr);
    EXPECT_EQ(inputs.arguments().k_scale->dimensions, fp8 ? 1 : 3);
    std::vector<std::vector<float>> outputs;
    for (const std::string& schedule : {std::string("naive"), testing::preset_for("decode")}) {
      JitAttention kernel(spec, target, {{"schedule", schedule}});
      if (!testing::kernels_run_here()) continue;  // compiled: the schedule fits
      inputs.clear_output();
      kernel.run(inputs.arguments());
      outputs.push_back(inputs.output());
    }
    if (outputs.size() < 2) continue;
    const CheckResult check = check_output(outputs[1], outputs[0], spec.dtype);
    EXPECT_TRUE(check.ok) << check.detail;
  }
}

}  // namespace
}  // namespace attnforge::autotune
