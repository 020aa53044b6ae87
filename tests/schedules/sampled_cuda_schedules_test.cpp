// Schedules drawn from the CUDA space (and the CUDA presets), over every
// kind of mask, MHA/GQA/MQA, f32 and f16: each JIT-compiles for CUDA here,
// without a GPU. Each then runs against the double reference, on sizes off
// every tile with Lq != Lk both ways, on every GPU target this machine has: a
// CUDA device, and an OpenCL device (pocl on the CPU), which runs the same
// GPU loops, shared memory and barriers (f32 only: it has no f16).
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "schedules/schedule_choice.h"
#include "schedules/space.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using Halide::Target;

const Target kCuda =
    Halide::get_host_target().with_feature(Target::CUDA).with_feature(Target::CUDACapability80);
const Target kOpenCl = Halide::get_host_target().with_feature(Target::OpenCL);

std::vector<std::string> schedules_for(const AttentionSpec& spec) {
  constexpr int kSamples = 3;
  schedules::ScheduleSpace space(spec, kCuda);
  std::vector<std::string> all;
  for (const std::string& name : schedules::presets_for(kCuda)) {
    if (space.contains(schedules::load_preset(name))) all.push_back(name);
  }
  std::mt19937 rng(7);
  for (int n = 0; n < kSamples; ++n) all.push_back(space.sample(rng).to_json().dump());
  return all;
}

void copy_to_host(halide_buffer_t* buffer) {
  if (buffer && buffer->device && buffer->device_interface) {
    ASSERT_EQ(buffer->device_interface->copy_to_host(nullptr, buffer), 0);
  }
}

const std::vector<testing::CaseShape> kOddShapes = {{2, 37, 101}, {1, 1, 9}, {1, 70, 19}};

// Runs `kernel` on the odd shapes and checks each. False when the target
// has no device to run on.
bool runs_correctly(const JitAttention& kernel, const AttentionSpec& spec, std::string* no_device,
                    const std::vector<testing::CaseShape>& shapes = kOddShapes) {
  for (testing::CaseShape shape : shapes) {
    SCOPED_TRACE(::testing::Message()
                 << "B " << shape.batch << " Lq " << shape.q_len << " Lk " << shape.kv_len);
    testing::AttentionCase c(spec, shape);
    try {
      kernel.run(c.arguments());
    } catch (const KernelError& error) {
      *no_device = error.what();
      return false;
    }
    copy_to_host(c.arguments().out);
    copy_to_host(c.arguments().weights);
    copy_to_host(c.arguments().lse);
    testing::Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << result.first_failure;
  }
  return true;
}

class SampledCudaSchedules : public ::testing::TestWithParam<const char*> {};

TEST_P(SampledCudaSchedules, CompileAndMatchTheReferenceOnEveryGpuTarget) {
  const AttentionSpec spec = AttentionSpec::parse(GetParam());
  bool cuda = true, opencl = spec.dtype == DType::f32;
  std::string why_not;
  int opencl_runs = 0;
  for (const std::string& schedule : schedules_for(spec)) {
    SCOPED_TRACE(schedule);
    const std::map<std::string, std::string> params = {{"schedule", schedule}};
    std::unique_ptr<JitAttention> kernel;
    ASSERT_NO_THROW(kernel = std::make_unique<JitAttention>(spec, kCuda, params));
    if (cuda) cuda = runs_correctly(*kernel, spec, &why_not);
    // One-warp blocks keep their state in gpu_lanes registers, which only CUDA has.
    if (!opencl ||
        !schedules::ScheduleSpace(spec, kOpenCl).contains(schedules::resolve_schedule(schedule))) {
      continue;
    }
    try {
      kernel = std::make_unique<JitAttention>(spec, kOpenCl, params);
    } catch (const KernelError& error) {
      // Halide's OpenCL C backend lacks a few vector intrinsics CUDA has, and
      // vectors wider than 16 (a 128-key block's row statistics).
      const std::string what = error.what();
      EXPECT_TRUE(what.find("C backend") != std::string::npos ||
                  what.find("Unsupported vector width in OpenCL C") != std::string::npos)
          << what;
      continue;
    }
    opencl = runs_correctly(*kernel, spec, &why_not);
    opencl_runs += opencl;
  }
  if (spec.dtype == DType::f32 && opencl) {
    EXPECT_GE(opencl_runs, 2) << "the presets at least run on OpenCL";
  }
  if (!cuda && !opencl) GTEST_SKIP() << "compiled only; no GPU target to run on: " << why_not;
}

INSTANTIATE_TEST_SUITE_P(
    Specs, SampledCudaSchedules,
    ::testing::Values("full.mha2.d64.f32", "causal.gqa4x2.d64.f16",
                      "window20_5.br.kpad.mha2.d32.f32", "causal.br.alibi.mqa2.d128.f16",
                      "causal.br.alibi.gqa4x2.d64.f32", "full.bias.mha2.d32.f32.weights",
                      "window.br.kpad.softcap20.mha2.d32.f32", "causal.br.kpad.gqa4x2.d32.f32.lse"),
    [](const auto& info) { return testing::test_name_of(info.param); });

// online_rows on the OpenCL device (pocl), which needs no lane registers:
// a thread per row, and a thread per row and key split, over every mask, on
// the odd shapes and a decoding batch (Lq 1 and 3 over 517 keys).
class RowPresetsOnOpenCl : public ::testing::TestWithParam<const char*> {};

TEST_P(RowPresetsOnOpenCl, MatchTheReference) {
  const AttentionSpec spec = AttentionSpec::parse(GetParam());
  std::vector<testing::CaseShape> shapes = kOddShapes;
  shapes.push_back({3, 1, 517});
  shapes.push_back({2, 3, 517});
  for (const char* preset : {"online_rows_cuda", "online_rows_split_cuda"}) {
    SCOPED_TRACE(preset);
    std::unique_ptr<JitAttention> kernel;
    ASSERT_NO_THROW(kernel = std::make_unique<JitAttention>(
                        spec, kOpenCl, std::map<std::string, std::string>{{"schedule", preset}}));
    std::string why_not;
    if (!runs_correctly(*kernel, spec, &why_not, shapes)) {
      GTEST_SKIP() << "compiled only; no OpenCL device: " << why_not;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, RowPresetsOnOpenCl,
                         ::testing::Values("full.mha2.d64.f32", "causal.br.kpad.gqa4x2.d32.f32",
                                           "window20_5.kpad.alibi.mqa2.d32.f32",
                                           "causal.bias.mha2.d32.f32",
                                           "window.kpad.softcap30.mqa2.d32.f32",
                                           "causal.kpad.mha2.d64.f32.lse"),
                         [](const auto& info) { return testing::test_name_of(info.param); });

// At head dim 128 a thread's row fits with key blocks of one: its state
// takes P.V a chunk at a time, and the chunk of the sum and max reads the
// last column of V.
TEST(RowsAtHeadDim128OnOpenCl, KeyBlocksOfOneMatchTheReference) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.kpad.alibi.gqa4x2.d128.f32");
  std::vector<testing::CaseShape> shapes = kOddShapes;
  shapes.push_back({2, 3, 517});
  for (const char* preset : {"online_rows_cuda", "online_rows_split_cuda"}) {
    SCOPED_TRACE(preset);
    schedules::Schedule schedule = schedules::load_preset(preset);
    schedule.key_block = 1;
    std::unique_ptr<JitAttention> kernel;
    ASSERT_NO_THROW(
        kernel = std::make_unique<JitAttention>(
            spec, kOpenCl,
            std::map<std::string, std::string>{{"schedule", schedule.to_json().dump()}}));
    std::string why_not;
    if (!runs_correctly(*kernel, spec, &why_not, shapes)) {
      GTEST_SKIP() << "compiled only; no OpenCL device: " << why_not;
    }
  }
}

}  // namespace
}  // namespace attnforge
