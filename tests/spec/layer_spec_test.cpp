#include "spec/layer_spec.h"

#include <gtest/gtest.h>

#include <functional>

namespace attnforge {
namespace {

TEST(LayerSpec, CanonicalStringsRoundTrip) {
  for (const char* text : {"self.dm512.causal.mha8.d64.f32", "cross.dm768.full.gqa12x4.d64.f32",
                           "self.dm64.nobias.window8_0.br.kpad.mqa4.d16.f32",
                           "cross.dm96.avgweights.full.bias.mha2.d48.f32.weights",
                           "self.dm32.causal.alibi.mha1.d32.f32.weights"}) {
    LayerSpec spec = LayerSpec::parse(text);
    EXPECT_EQ(spec.to_string(), text);
    EXPECT_EQ(LayerSpec::parse(spec.to_string()), spec);
  }
  LayerSpec averaged = LayerSpec::parse("cross.dm96.avgweights.full.bias.mha2.d48.f32.weights");
  EXPECT_EQ(averaged.weights, LayerWeights::averaged);
  EXPECT_FALSE(averaged.self_attention);
  EXPECT_EQ(LayerSpec::parse("self.dm32.full.mha1.d32.f32.weights").weights,
            LayerWeights::per_head);
}

TEST(LayerSpec, MakeDerivesTheHeadDim) {
  LayerSpec spec = LayerSpec::make(768, 12, 4);
  EXPECT_EQ(spec.head_dim(), 64);
  EXPECT_EQ(spec.qkv_features(), (12 + 2 * 4) * 64);
  EXPECT_EQ(spec.to_string(), "self.dm768.full.gqa12x4.d64.f32");
}

std::string field_of(const std::function<void()>& build) {
  try {
    build();
  } catch (const SpecError& error) {
    return error.field();
  }
  return "(no error)";
}

TEST(LayerSpec, ErrorsNameTheField) {
  EXPECT_EQ(field_of([] { LayerSpec::make(510, 8, 8); }), "d_model");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm510.full.mha8.d64.f32"); }), "d_model");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512.full.mha8.d32.f32"); }), "head_dim");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512.full.mha8.d64.f16"); }), "dtype");
  EXPECT_EQ(field_of([] { LayerSpec::parse("both.dm512.full.mha8.d64.f32"); }), "kind");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.512.full.mha8.d64.f32"); }), "d_model");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm0512.full.mha8.d64.f32"); }), "d_model");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512.avgweights.full.mha8.d64.f32"); }),
            "weights");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512.full.gqa8x3.d64.f32"); }), "kv_heads");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512"); }), "mask");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512.window.mha8.d64.f32"); }), "window");
  EXPECT_EQ(field_of([] { LayerSpec::parse("self.dm512.causal.moddoc_0123abcd.mha8.d64.f32"); }),
            "modifier");
}

}  // namespace
}  // namespace attnforge
