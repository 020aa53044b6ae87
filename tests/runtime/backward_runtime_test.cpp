// attention_backward() through the emitted package: the backward kernels
// against the double reference's gradients, on the reference's forward and
// on the runtime's own forward (.lse), and its argument checks: named
// errors, and nothing written.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnforge/attention.h"
#include "tensor_views.h"

namespace attnforge::testing {
namespace {

// The specs the test package ships backward kernels for (tests/runtime/CMakeLists.txt).
constexpr const char* kBackwardSpecs[] = {
    "causal.br.kpad.gqa8x2.d64.f32", "full.bias.mqa4.d32.bf16", "causal.br.alibi.mha2.d32.f32",
    "window.br.kpad.mha2.d32.f16", "full.bias.mqa4.d32.f32.dbias"};

constexpr CaseShape kShapes[] = {{1, 1, 1}, {2, 7, 33}, {3, 19, 12}, {1, 70, 131}};

std::string label(const std::string& spec, CaseShape shape) {
  return spec + " B" + std::to_string(shape.batch) + " Lq" + std::to_string(shape.q_len) + " Lk" +
         std::to_string(shape.kv_len);
}

TEST(RuntimeBackward, GradientsMatchTheReference) {
  for (const char* text : kBackwardSpecs) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    for (CaseShape shape : kShapes) {
      for (Layout layout : {Layout::bhld, Layout::blhd}) {
        BackwardCase c(spec, shape, {.layout = layout, .seed = 21});
        BackwardRuntimeCall call(spec, c);
        const Status status = call.run();
        ASSERT_TRUE(status.ok()) << label(text, shape) << ": " << status.message;
        const Comparison result = c.compare();
        EXPECT_TRUE(result.ok) << label(text, shape) << ": " << result.first_failure;
      }
    }
  }
}

// Training's path through the runtime: attention() with lse, then attention_backward().
TEST(RuntimeBackward, TheRuntimesForwardFeedsItsBackward) {
  for (const char* text : kBackwardSpecs) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    const AttentionSpec forward_spec = forward_spec_of(spec);
    for (CaseShape shape : kShapes) {
      BackwardCase c(spec, shape, {.seed = 22});
      RuntimeCall forward(forward_spec, c.forward_arguments());
      const Status ran = forward.run();
      ASSERT_TRUE(ran.ok()) << label(text, shape) << ": " << ran.message;
      c.take_forward_outputs();
      BackwardRuntimeCall call(spec, c);
      const Status status = call.run();
      ASSERT_TRUE(status.ok()) << label(text, shape) << ": " << status.message;
      const Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << label(text, shape) << ": " << result.first_failure;
    }
  }
}

TEST(RuntimeBackward, ItsKernelIsTheSpecsBackward) {
  int cpu = 0, cuda = 0;
  for (const KernelChoice& k : available_kernels()) {
    if (k.bucket != "backward") continue;
    EXPECT_NE(k.function.find("_backward"), std::string::npos) << k.function;
    if (k.target.find("cuda") == std::string::npos) {
      ++cpu;
      continue;
    }
    ++cuda;
  }
  EXPECT_EQ(cpu, 10);  // 5 specs, avx2 and host
  EXPECT_EQ(cuda, 5);  // and CUDA
}

// dBias: named when it cannot be, and nothing written.
TEST(RuntimeBackward, ABiasGradientIsCheckedLikeTheOthers) {
  const AttentionSpec with_bias = AttentionSpec::parse("full.bias.mqa4.d32.f32.dbias");
  BackwardCase c(with_bias, {2, 5, 9});
  const std::vector<double> d_bias = c.d_bias(), dq = c.dq();
  std::vector<float> scratch(2 * 4 * 5 * 9, 7.0f);
  const TensorView short_d_bias =
      TensorView::contiguous(scratch.data(), ElementType::f32, {2, 4, 5, 8});
  const TensorView f16_d_bias =
      TensorView::contiguous(scratch.data(), ElementType::f16, {2, 4, 5, 9});
  auto expect_refused = [&](BackwardRuntimeCall& bad, const std::string& message) {
    const Status status = bad.run();
    EXPECT_FALSE(status.ok()) << message;
    EXPECT_NE(status.message.find(message), std::string::npos) << status.message;
  };
  {
    BackwardRuntimeCall bad(with_bias, c);
    bad.d_bias_given = &short_d_bias;
    expect_refused(bad, "d_bias: expected shape [B, H, Lq, Lk]");
  }
  {
    BackwardRuntimeCall bad(with_bias, c);
    bad.d_bias_given = &f16_d_bias;
    expect_refused(bad, "d_bias: expected element type f32, got f16");
  }
  {
    BackwardRuntimeCall bad(with_bias, c);
    bad.d_bias = bad.bias;
    expect_refused(bad, "d_bias: its memory overlaps bias");
  }
  {
    BackwardRuntimeCall bad(with_bias, c);
    bad.options.bias = nullptr;
    expect_refused(bad, "d_bias: the gradient of a bias; the call passes none");
  }
  EXPECT_EQ(c.d_bias(), d_bias);
  EXPECT_EQ(c.dq(), dq);
  // Without d_bias the call needs the spec's backward kernel without dBias,
  // which this package does not ship.
  BackwardRuntimeCall plain(with_bias, c);
  plain.d_bias_given = nullptr;
  expect_refused(plain, "no emitted kernel computes full.bias.mqa4.d32.f32");
  EXPECT_EQ(c.dq(), dq);
}

// Each bad argument's message, and dq, dk and dv untouched.
TEST(RuntimeBackward, BadArgumentsAreNamedAndNothingIsWritten) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.kpad.gqa8x2.d64.f32");
  BackwardCase c(spec, {2, 5, 9});
  BackwardRuntimeCall call(spec, c);
  const std::vector<double> dq = c.dq(), dk = c.dk(), dv = c.dv();
  std::vector<float> scratch(2 * 8 * 9 * 64, 7.0f);
  const TensorView short_d_out =
      TensorView::contiguous(scratch.data(), ElementType::f32, {2, 8, 4, 64});
  const TensorView f16_lse = TensorView::contiguous(scratch.data(), ElementType::f16, {2, 8, 5});
  auto expect_refused = [&](BackwardRuntimeCall& bad, const std::string& message) {
    const Status status = bad.run();
    EXPECT_FALSE(status.ok()) << message;
    EXPECT_NE(status.message.find(message), std::string::npos) << status.message;
  };
  {
    BackwardRuntimeCall bad(spec, c);
    bad.d_out = short_d_out;
    expect_refused(bad, "d_out: expected shape [B, H, Lq, D] (as out)");
  }
  {
    BackwardRuntimeCall bad(spec, c);
    bad.lse = f16_lse;
    expect_refused(bad, "lse: expected element type f32, got f16");
  }
  {
    BackwardRuntimeCall bad(spec, c);
    bad.dq = bad.q;
    expect_refused(bad, "dq: its memory overlaps q");
  }
  {
    BackwardRuntimeCall bad(spec, c);
    bad.dv = bad.dk;
    expect_refused(bad, "dv: its memory overlaps dk");
  }
  {
    BackwardRuntimeCall bad(spec, c);
    bad.options.weights = &bad.dq;
    expect_refused(bad, "weights: not taken by attention_backward");
  }
  {
    BackwardRuntimeCall bad(spec, c);
    bad.options.mask = MaskKind::none;  // full.br.kpad.gqa8x2...: no backward kernel shipped
    expect_refused(bad, "no emitted kernel computes");
  }
  EXPECT_EQ(c.dq(), dq);
  EXPECT_EQ(c.dk(), dk);
  EXPECT_EQ(c.dv(), dv);
}

}  // namespace
}  // namespace attnforge::testing
