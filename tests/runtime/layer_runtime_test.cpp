// The MHA layer through the runtime against the emitted package's layer
// kernels: results match the double reference on odd sizes (self-attention
// with key padding; cross-attention with GQA projections, a causal mask
// aligned bottom-right, a bias and averaged weights); every bad argument is a clear error naming it
// that leaves out untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attnforge/mha_layer.h"
#include "tensor_views.h"
#include "tests/support/layer_case.h"

namespace attnforge::testing {
namespace {

const char* const kSelfLayer = "self.dm64.full.kpad.mha4.d16.f32";
const char* const kCrossLayer = "cross.dm48.avgweights.causal.br.bias.gqa4x2.d12.f32.weights";

// Views of a LayerCase's tensors and the layer options for its spec; the
// case must outlive it.
struct LayerCall {
  LayerCall(const LayerSpec& spec, LayerCase& c) : self_attention(spec.self_attention) {
    LayerArguments& a = c.arguments();
    auto view = [](halide_buffer_t* buffer, TensorView& into) -> const TensorView* {
      if (!buffer) return nullptr;
      into = view_of(*buffer);
      return &into;
    };
    x_q = view_of(*a.x_q);
    if (!self_attention) x_kv = view_of(*a.x_kv);
    out = view_of(*a.out);
    p.w_qkv = view(a.w_qkv, w_qkv);
    p.b_qkv = view(a.b_qkv, b_qkv);
    p.w_q = view(a.w_q, w_q);
    p.w_k = view(a.w_k, w_k);
    p.w_v = view(a.w_v, w_v);
    p.b_q = view(a.b_q, b_q);
    p.b_k = view(a.b_k, b_k);
    p.b_v = view(a.b_v, b_v);
    p.w_o = view(a.w_o, w_o);
    p.b_o = view(a.b_o, b_o);
    const AttentionSpec& s = spec.attention;
    options.heads = s.heads;
    options.kv_heads = s.kv_heads;
    options.attention = mask_options(s);
    options.attention.key_lengths = view(a.key_lengths, key_lengths);
    options.attention.bias = view(a.bias, bias);
    options.attention.weights = a.weights ? &(weights = view_of(*a.weights)) : nullptr;
    options.average_weights = spec.weights == LayerWeights::averaged;
  }

  Status run() {
    return self_attention ? mha_layer(x_q, p, out, options) : mha_layer(x_q, x_kv, p, out, options);
  }

  bool self_attention;
  TensorView x_q, x_kv, out, w_qkv, b_qkv, w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o;
  TensorView key_lengths, bias, weights;
  LayerParameters p;
  LayerOptions options;
};

void expect_matches_reference(const char* text, CaseShape shape) {
  const LayerSpec spec = LayerSpec::parse(text);
  LayerCase c(spec, shape, 3);
  LayerCall call(spec, c);
  Status status = call.run();
  ASSERT_TRUE(status.ok()) << text << ": " << status.message;
  Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << text << " B" << shape.batch << " Lq" << shape.q_len << " Lk"
                         << shape.kv_len << ": " << result.first_failure << " (max error "
                         << result.max_error << ")";
}

TEST(RuntimeLayer, SelfAttentionMatchesTheReferenceOnOddSizes) {
  for (CaseShape shape : {CaseShape{1, 1, 1}, CaseShape{2, 37, 37}, CaseShape{3, 70, 70}}) {
    expect_matches_reference(kSelfLayer, shape);
  }
}

TEST(RuntimeLayer, CrossAttentionWithBiasAndAveragedWeightsMatchesTheReference) {
  for (CaseShape shape : {CaseShape{2, 7, 33}, CaseShape{1, 1, 20}, CaseShape{1, 50, 3}}) {
    expect_matches_reference(kCrossLayer, shape);
  }
}

TEST(RuntimeLayer, ASoftcappedLayerMatchesTheReference) {
  for (CaseShape shape : {CaseShape{1, 1, 1}, CaseShape{2, 37, 37}}) {
    expect_matches_reference("self.dm32.causal.softcap20.mha2.d16.f32", shape);
  }
}

TEST(RuntimeLayer, TheGenericLayerKernelIsChosen) {
  const LayerSpec spec = LayerSpec::parse(kSelfLayer);
  LayerCase c(spec, {1, 5, 5});
  LayerCall call(spec, c);
  KernelChoice choice;
  Status status = choose_layer_kernel(call.x_q, nullptr, call.p, call.out, call.options, &choice);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(choice.spec, kSelfLayer);
  EXPECT_EQ(choice.bucket, "generic");
}

// Runs the call after `spoil` and expects an error whose message starts with
// `argument` (the argument named), with out untouched.
template <typename Spoil>
void expect_error(const char* text, ErrorCode code, const std::string& argument, Spoil spoil) {
  const LayerSpec spec = LayerSpec::parse(text);
  LayerCase c(spec, {2, 5, 5});
  LayerCall call(spec, c);
  float* out = static_cast<float*>(call.out.data);
  const int64_t count = call.out.shape[0] * call.out.shape[1] * call.out.shape[2];
  for (int64_t n = 0; n < count; ++n) out[n] = 7.0f;
  spoil(call);
  Status status = call.run();
  EXPECT_EQ(status.code, code) << argument << ": " << status.message;
  EXPECT_EQ(status.message.rfind(argument, 0), 0u) << status.message;
  for (int64_t n = 0; n < count; ++n) ASSERT_EQ(out[n], 7.0f) << argument << " at " << n;
}

TEST(RuntimeLayer, BadArgumentsAreNamedAndOutIsUntouched) {
  using E = ErrorCode;
  const E invalid = E::invalid_argument;
  expect_error(kSelfLayer, invalid, "heads:", [](LayerCall& c) { c.options.heads = 0; });
  expect_error(kSelfLayer, invalid, "d_model:", [](LayerCall& c) {
    c.options.heads = 5;
    c.options.kv_heads = 0;
  });
  expect_error(kSelfLayer, invalid, "kv_heads:", [](LayerCall& c) { c.options.kv_heads = 3; });
  expect_error(kCrossLayer, invalid, "w_k:", [](LayerCall& c) { c.options.kv_heads = 4; });
  expect_error(kSelfLayer, invalid, "w_qkv:", [](LayerCall& c) { c.w_qkv.shape[1] -= 1; });
  expect_error(kSelfLayer, invalid, "w_qkv:", [](LayerCall& c) { c.p.w_qkv = nullptr; });
  expect_error(kSelfLayer, invalid, "w_o:", [](LayerCall& c) { c.w_o.type = ElementType::f16; });
  expect_error(kSelfLayer, invalid, "b_o:", [](LayerCall& c) { c.p.b_o = nullptr; });
  expect_error(kSelfLayer, invalid, "w_q:", [](LayerCall& c) { c.p.w_q = &c.w_qkv; });
  expect_error(kSelfLayer, invalid, "x:", [](LayerCall& c) { c.x_q.rank = 2; });
  expect_error(kSelfLayer, invalid, "w_qkv:", [](LayerCall& c) { c.x_q.shape[2] = 32; });
  expect_error(kSelfLayer, invalid, "x:", [](LayerCall& c) { c.x_q.device = Device::cuda; });
  expect_error(kSelfLayer, invalid, "out:", [](LayerCall& c) { c.out.shape[1] += 1; });
  expect_error(kSelfLayer, invalid, "out:", [](LayerCall& c) { c.out.data = c.x_q.data; });
  expect_error(kSelfLayer, invalid, "key_lengths:", [](LayerCall& c) {
    static int32_t too_long[2] = {5, 6};
    c.key_lengths.data = too_long;
  });
  expect_error(kSelfLayer, invalid, "page_table:", [](LayerCall& c) {
    c.options.attention.page_table = &c.key_lengths;
  });
  expect_error(kCrossLayer, invalid, "x_kv:", [](LayerCall& c) { c.x_kv.shape[2] = 40; });
  expect_error(kCrossLayer, invalid, "w_k:", [](LayerCall& c) { c.w_k.shape[0] = 40; });
  expect_error(kCrossLayer, invalid, "weights:", [](LayerCall& c) {
    c.options.average_weights = false;  // per-head weights are rank 4
  });
  expect_error(kCrossLayer, invalid, "bias, alibi_slopes:", [](LayerCall& c) {
    c.options.attention.alibi_slopes = &c.b_o;
  });
  // A valid call the package has no kernel for: the message lists the layers it has.
  expect_error(kSelfLayer, E::no_kernel, "no emitted layer kernel computes self.dm64.causal",
               [](LayerCall& c) { c.options.attention.mask = MaskKind::causal; });
}

}  // namespace
}  // namespace attnforge::testing
