// The layer Generator, JIT-compiled naive and under x86 schedules, against the
// double reference: self- and cross-attention, MHA/GQA/MQA, every mask kind,
// biases on and off, weights per head and averaged, odd sizes.
#include <gtest/gtest.h>

#include <algorithm>

#include "generators/jit_layer.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "tests/support/layer_case.h"
#include "tests/support/target_presets.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::CaseShape;
using testing::Comparison;
using testing::LayerCase;

struct LayerTestCase {
  const char* spec;
  const char* schedule;  // "naive", a form's host preset, or "<form>+fuse_q"
};

// The schedule parameter: naive, or the form's kernel-target preset with small
// projection tiles (so odd lengths cross them) and Q fused on request.
std::string schedule_param(const std::string& choice) {
  if (choice == "naive") return choice;
  const bool fuse_q = choice.find("+fuse_q") != std::string::npos;
  schedules::Schedule s =
      schedules::load_preset(testing::preset_for(choice.substr(0, choice.find('+'))));
  s.projection_vectors = 2;
  s.projection_rows = 4;
  s.projection_block = 8;
  s.projection_fuse_q = fuse_q;
  return s.to_json().dump();
}

std::vector<CaseShape> shapes_for(const LayerSpec& spec) {
  if (spec.self_attention) return {{1, 1, 1}, {2, 37, 37}};
  return {{2, 7, 33}, {1, 1, 20}, {1, 50, 3}};
}

class LayerJit : public ::testing::TestWithParam<LayerTestCase> {};

TEST_P(LayerJit, MatchesReferenceOnOddShapes) {
  const std::string schedule = GetParam().schedule;
  if (schedule != "naive" && !testing::kernel_target_has_presets()) {
    GTEST_SKIP() << "presets need AVX2";
  }
  const LayerSpec spec = LayerSpec::parse(GetParam().spec);
  JitLayer kernel(spec, testing::kernel_target(), {{"schedule", schedule_param(schedule)}});
  if (!testing::kernels_run_here()) return;
  for (CaseShape shape : shapes_for(spec)) {
    LayerCase c(spec, shape, 5);
    kernel.run(c.arguments());
    Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << spec.to_string() << " " << schedule << " B" << shape.batch << " Lq"
                           << shape.q_len << " Lk" << shape.kv_len << ": " << result.first_failure
                           << " (max error " << result.max_error << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layers, LayerJit,
    ::testing::Values(LayerTestCase{"self.dm64.full.mha4.d16.f32", "naive"},
                      LayerTestCase{"self.dm64.causal.mha4.d16.f32", "online"},
                      LayerTestCase{"self.dm64.causal.gqa4x2.d16.f32", "fused+fuse_q"},
                      LayerTestCase{"self.dm48.nobias.causal.alibi.mha3.d16.f32", "online+fuse_q"},
                      LayerTestCase{"self.dm72.window5_2.kpad.gqa6x2.d12.f32", "materialized"},
                      LayerTestCase{"cross.dm64.window5_2.br.kpad.mqa4.d16.f32", "online"},
                      LayerTestCase{"cross.dm64.nobias.full.bias.gqa4x2.d16.f32", "fused+fuse_q"},
                      LayerTestCase{"cross.dm40.causal.br.mha5.d8.f32", "naive"},
                      LayerTestCase{"self.dm64.causal.mha4.d16.f32.weights", "materialized"},
                      LayerTestCase{"cross.dm48.avgweights.full.kpad.gqa4x2.d12.f32.weights",
                                    "materialized"},
                      LayerTestCase{"self.dm32.avgweights.full.mha2.d16.f32.weights", "naive"}),
    [](const ::testing::TestParamInfo<LayerTestCase>& info) {
      std::string name = std::string(info.param.spec) + "_" + info.param.schedule;
      std::replace(name.begin(), name.end(), '+', '_');
      return testing::test_name_of(name);
    });

TEST(LayerJit, WrongWeightShapeIsAnErrorNamingTheWeight) {
  const LayerSpec spec = LayerSpec::parse("cross.dm64.full.mha4.d16.f32");
  JitLayer kernel(spec, testing::kernel_target());
  if (!testing::kernels_run_here()) GTEST_SKIP() << "the host cannot run the kernel target";
  LayerCase c(spec, {1, 3, 5});
  Halide::Runtime::Buffer<float> wrong(48, 64);  // W_k with 3 heads' features instead of 4
  c.arguments().w_k = wrong.raw_buffer();
  try {
    kernel.run(c.arguments());
    FAIL() << "a wrong W_k ran";
  } catch (const KernelError& error) {
    EXPECT_NE(std::string(error.what()).find("w_k"), std::string::npos) << error.what();
  }
}

TEST(LayerJit, ScheduleThatDoesNotFitIsRejectedBeforeCompiling) {
  if (!testing::kernel_target_has_presets()) GTEST_SKIP() << "presets need AVX2";
  const LayerSpec spec = LayerSpec::parse("self.dm64.full.mha4.d16.f32");
  schedules::Schedule s = schedules::load_preset(testing::preset_for("materialized"));
  s.projection_fuse_q = true;
  try {
    JitLayer kernel(spec, testing::kernel_target(), {{"schedule", s.to_json().dump()}});
    FAIL() << "fusing Q into the materialized form compiled";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("projection_fuse_q"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace attnforge
