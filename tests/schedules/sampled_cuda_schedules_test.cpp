// Schedules drawn from the CUDA space (and the CUDA presets), over every
// kind of mask, MHA/GQA/MQA, f32 and f16: each JIT-compiles for CUDA here,
// without a GPU; where a CUDA device exists each also matches the reference
// on sizes off every tile, with Lq != Lk.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

const Halide::Target kCuda = Halide::get_host_target()
                                 .with_feature(Halide::Target::CUDA)
                                 .with_feature(Halide::Target::CUDACapability80);

std::vector<std::string> schedules_for(const AttentionSpec& spec) {
  constexpr int kSamples = 3;
  std::vector<std::string> all;
  for (const std::string& name : schedules::presets_for(kCuda)) {
    if (schedules::ScheduleSpace(spec, kCuda).contains(schedules::load_preset(name))) {
      all.push_back(name);
    }
  }
  schedules::ScheduleSpace space(spec, kCuda);
  std::mt19937 rng(7);
  for (int n = 0; n < kSamples; ++n) all.push_back(space.sample(rng).to_json().dump());
  return all;
}

void copy_to_host(halide_buffer_t* buffer) {
  if (buffer && buffer->device && buffer->device_interface) {
    ASSERT_EQ(buffer->device_interface->copy_to_host(nullptr, buffer), 0);
  }
}

class SampledCudaSchedules : public ::testing::TestWithParam<const char*> {};

TEST_P(SampledCudaSchedules, CompileAndMatchTheReferenceOnAGpu) {
  const AttentionSpec spec = AttentionSpec::parse(GetParam());
  bool device = true;
  std::string no_device;
  for (const std::string& schedule : schedules_for(spec)) {
    SCOPED_TRACE(schedule);
    std::unique_ptr<JitAttention> kernel;
    ASSERT_NO_THROW(kernel = std::make_unique<JitAttention>(
                        spec, kCuda, std::map<std::string, std::string>{{"schedule", schedule}}));
    if (!device) continue;
    for (testing::CaseShape shape : {testing::CaseShape{2, 37, 101}, testing::CaseShape{1, 1, 9},
                                     testing::CaseShape{1, 70, 19}}) {
      testing::AttentionCase c(spec, shape);
      try {
        kernel->run(c.arguments());
      } catch (const KernelError& error) {
        device = false;  // no CUDA device: compile the rest only
        no_device = error.what();
        break;
      }
      copy_to_host(c.arguments().out);
      testing::Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << result.first_failure;
    }
  }
  if (!device) GTEST_SKIP() << "compiled only; no CUDA device to run on: " << no_device;
}

INSTANTIATE_TEST_SUITE_P(Specs, SampledCudaSchedules,
                         ::testing::Values("full.mha2.d64.f32", "causal.gqa4x2.d64.f16",
                                           "window20_5.br.kpad.mha2.d32.f32",
                                           "causal.br.alibi.mqa2.d128.f16",
                                           "full.bias.mha2.d32.f32.weights"),
                         [](const auto& info) { return testing::test_name_of(info.param); });

}  // namespace
}  // namespace attnforge
