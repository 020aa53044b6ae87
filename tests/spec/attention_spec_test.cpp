#include "spec/attention_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace attnforge {
namespace {

// Every spec string here is canonical: parse then print gives it back.
const char* const kCanonicalSpecs[] = {
    "full.mha1.d64.f32",
    "full.mha8.d64.f32",
    "causal.gqa32x8.d128.f16",
    "causal.br.mqa8.d64.bf16",
    "window256_0.mha12.d64.f32",
    "window16_16.br.kpad.alibi.gqa12x4.d32.f16.weights",
    "full.kpad.mha2.d128.f32",
    "full.bias.mha4.d32.bf16.weights",
    "full.br.alibi.mha4.d64.f32",
    "causal.kpad.bias.mqa16.d96.f16",
    "window0_0.mha1.d1.f32",
    "causal.br.kpad.page16.gqa32x8.d128.f32",
    "full.kpad.page1.alibi.mha2.d64.bf16",
    "causal.br.kpad.page16.gqa32x8.d128.bf16.kv8",
    "full.bias.mha4.d32.f32.kv8.weights",
    "causal.br.kpad.page16.gqa32x8.d128.bf16.kvfp8",
    "window64_0.alibi.mqa4.d64.f16.kvfp8",
    "causal.softcap30.gqa8x2.d64.f32",
    "window.br.kpad.alibi.softcap2p5.mha2.d32.bf16.kv8",
    "window.mha8.d64.f32",
    "full.softcap0p001.mha1.d1.f16",
    "full.bias.softcap1000000.mha1.d1.f16.weights",
    "causal.moddocument_0123abcd.mha8.d64.f32",
    "window.br.kpad.alibi.softcap30.modt5_ffffffff.gqa4x2.d32.bf16.kv8.weights",
    "causal.br.kpad.bias.softcap30.gqa4x2.d64.bf16.dbias",
};

class CanonicalSpec : public ::testing::TestWithParam<const char*> {};

TEST_P(CanonicalSpec, RoundTripsThroughItsString) {
  AttentionSpec spec = AttentionSpec::parse(GetParam());
  EXPECT_EQ(spec.to_string(), GetParam());
  EXPECT_EQ(AttentionSpec::parse(spec.to_string()), spec);
}

INSTANTIATE_TEST_SUITE_P(Specs, CanonicalSpec, ::testing::ValuesIn(kCanonicalSpecs));

TEST(AttentionSpec, ParsesEveryField) {
  AttentionSpec spec = AttentionSpec::parse("window128_4.br.kpad.alibi.gqa12x4.d64.bf16.weights");
  EXPECT_EQ(spec.mask, PositionMask::window);
  EXPECT_EQ(spec.window_left, 128);
  EXPECT_EQ(spec.window_right, 4);
  EXPECT_EQ(spec.alignment, Alignment::bottom_right);
  EXPECT_TRUE(spec.key_padding);
  EXPECT_EQ(spec.bias, BiasKind::alibi);
  EXPECT_EQ(spec.heads, 12);
  EXPECT_EQ(spec.kv_heads, 4);
  EXPECT_EQ(spec.group_size(), 3);
  EXPECT_EQ(spec.head_dim, 64);
  EXPECT_EQ(spec.dtype, DType::bf16);
  EXPECT_TRUE(spec.return_weights);
}

TEST(AttentionSpec, EveryFieldChangesTheString) {
  AttentionSpec base = AttentionSpec::parse("causal.mha8.d64.f32");
  std::vector<AttentionSpec> variants(15, base);
  variants[0].mask = PositionMask::none;
  variants[1].alignment = Alignment::bottom_right;
  variants[2].key_padding = true;
  variants[3].bias = BiasKind::tensor;
  variants[4].bias = BiasKind::alibi;
  variants[5].kv_heads = 2;
  variants[6].head_dim = 128;
  variants[7].dtype = DType::f16;
  variants[8].return_weights = true;
  variants[9].kv_storage = KvStorage::int8;
  variants[10].softcap = 30.0f;
  variants[11].mask = PositionMask::window;
  variants[11].run_time_window = true;
  variants[12].modifier = "document";
  variants[12].modifier_hash = "0123abcd";
  variants[13].modifier = "document";
  variants[13].modifier_hash = "0123abce";
  variants[14].bias = BiasKind::tensor;
  variants[14].bias_grad = true;
  std::set<std::string> strings = {base.to_string()};
  for (const AttentionSpec& v : variants) {
    EXPECT_TRUE(strings.insert(v.to_string()).second) << v.to_string();
    EXPECT_EQ(AttentionSpec::parse(v.to_string()), v);
  }
}

struct BadSpec {
  const char* text;
  const char* field;
};

class InvalidSpecString : public ::testing::TestWithParam<BadSpec> {};

TEST_P(InvalidSpecString, NamesTheField) {
  try {
    AttentionSpec::parse(GetParam().text);
    FAIL() << GetParam().text << " parsed";
  } catch (const SpecError& error) {
    EXPECT_EQ(error.field(), GetParam().field) << error.what();
    EXPECT_NE(std::string(error.what()).find(GetParam().field), std::string::npos) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Strings, InvalidSpecString,
    ::testing::Values(
        BadSpec{"", "mask"}, BadSpec{"diagonal.mha8.d64.f32", "mask"},
        BadSpec{"causal.gqa12x5.d64.f32", "kv_heads"}, BadSpec{"causal.gqa4x8.d64.f32", "kv_heads"},
        BadSpec{"causal.mha0.d64.f32", "heads"}, BadSpec{"causal.mha8.d0.f32", "head_dim"},
        BadSpec{"causal.mha8.d4096.f32", "head_dim"}, BadSpec{"causal.mha8.64.f32", "head_dim"},
        BadSpec{"causal.mha8.d064.f32", "head_dim"}, BadSpec{"causal.mha8.d64.f64", "dtype"},
        BadSpec{"causal.mha8.d64", "dtype"}, BadSpec{"causal.mha8", "head_dim"},
        BadSpec{"window16.mha8.d64.f32", "window"},
        BadSpec{"window-1_0.mha8.d64.f32", "window_left"},
        BadSpec{"window4_x.mha8.d64.f32", "window_right"},
        BadSpec{"full.br.mha8.d64.f32", "alignment"}, BadSpec{"causal.gqa8x8.d64.f32", "heads"},
        BadSpec{"causal.gqa8x1.d64.f32", "heads"}, BadSpec{"causal.mha8.d64.f32.extra", "spec"},
        BadSpec{"causal.kpad.br.mha8.d64.f32", "heads"},
        BadSpec{"causal.page16.mha8.d64.f32", "page_size"},
        BadSpec{"causal.kpad.page0.mha8.d64.f32", "page_size"},
        BadSpec{"causal.kpad.page016.mha8.d64.f32", "page_size"},
        BadSpec{"causal.kpad.pages.mha8.d64.f32", "page_size"},
        BadSpec{"causal.kpad.page8192.mha8.d64.f32", "page_size"},
        BadSpec{"causal.kpad.page16.bias.mha8.d64.f32", "page_size"},
        BadSpec{"causal.kpad.page16.mha8.d64.f32.weights", "page_size"},
        BadSpec{"causal.mha8.d64.f32.weights.kv8", "spec"},
        BadSpec{"causal.mha8.d64.kv8.f32", "dtype"},
        BadSpec{"causal.mha8.d64.f32.kv8.kvfp8", "spec"},
        BadSpec{"causal.mha8.d64.f32.dbias", "bias_grad"},
        BadSpec{"causal.alibi.mha8.d64.f32.dbias", "bias_grad"},
        BadSpec{"causal.bias.mha8.d64.f32.lse.dbias", "bias_grad"},
        BadSpec{"causal.bias.mha8.d64.f32.dbias.lse", "spec"},
        BadSpec{"causal.mha99999.d64.f32", "heads"},
        BadSpec{"causal.softcap.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcap-30.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcap1e3.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcap0.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcap0p0001.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcap2000000.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcapinf.mha8.d64.f32", "softcap"},
        BadSpec{"causal.softcap30p0.mha8.d64.f32", "heads"},
        BadSpec{"causal.softcap30.alibi.mha8.d64.f32", "heads"},
        BadSpec{"window_.mha8.d64.f32", "window_left"},
        BadSpec{"causal.moddocument.mha8.d64.f32", "modifier"},
        BadSpec{"causal.modDoc_0123abcd.mha8.d64.f32", "modifier"},
        BadSpec{"causal.mod_0123abcd.mha8.d64.f32", "modifier"},
        BadSpec{"causal.mod1doc_0123abcd.mha8.d64.f32", "modifier"},
        BadSpec{"causal.moddoc_0123ABCD.mha8.d64.f32", "modifier_hash"},
        BadSpec{"causal.moddoc_0123abc.mha8.d64.f32", "modifier_hash"},
        BadSpec{"causal.moddoc_0123abcd.softcap30.mha8.d64.f32", "heads"}));

TEST(AttentionSpec, AModifierIsNamedWithTheHashOfItsSource) {
  EXPECT_EQ(modifier_hash_of("rule").size(), 8u);
  EXPECT_NE(modifier_hash_of("rule"), modifier_hash_of("rule\n"));
  EXPECT_EQ(modifier_hash_of("rule"), modifier_hash_of("rule"));
  EXPECT_TRUE(is_modifier_name("t5"));
  EXPECT_FALSE(is_modifier_name("5t"));
  EXPECT_FALSE(is_modifier_name("doc_mask"));
  EXPECT_FALSE(is_modifier_name(std::string(33, 'a')));
  AttentionSpec spec = AttentionSpec::parse("causal.mha8.d64.f32");
  spec.modifier_hash = "0123abcd";  // a hash without a name
  EXPECT_THROW(spec.validate(), SpecError);
}

TEST(AttentionSpec, SoftcapIsTheShortestTextThatReadsBack) {
  AttentionSpec spec = AttentionSpec::parse("causal.softcap50p5.mha8.d64.f32");
  EXPECT_FLOAT_EQ(spec.softcap, 50.5f);
  EXPECT_TRUE(spec.softcapped());
  spec.softcap = 0.1f;
  EXPECT_EQ(spec.to_string(), "causal.softcap0p1.mha8.d64.f32");
  EXPECT_EQ(AttentionSpec::parse(spec.to_string()).softcap, 0.1f);
}

TEST(AttentionSpec, AWindowGivenPerCallHasNoCompiledSizes) {
  AttentionSpec spec = AttentionSpec::parse("window.br.kpad.mha8.d64.f32");
  EXPECT_EQ(spec.mask, PositionMask::window);
  EXPECT_TRUE(spec.run_time_window);
  EXPECT_TRUE(spec.positional());
  spec.window_left = 4;
  EXPECT_THROW(spec.validate(), SpecError);
  spec.window_left = 0;
  spec.mask = PositionMask::causal;
  EXPECT_THROW(spec.validate(), SpecError);
}

TEST(AttentionSpec, WindowOnASpecWithoutAWindowIsAnError) {
  AttentionSpec spec;
  spec.mask = PositionMask::causal;
  spec.window_left = 64;
  try {
    spec.validate();
    FAIL();
  } catch (const SpecError& error) {
    EXPECT_EQ(error.field(), "window");
    EXPECT_NE(std::string(error.what()).find("causal"), std::string::npos) << error.what();
  }
}

// Messages name a mask by its spec token.
TEST(AttentionSpec, AFullMaskIsNamedFull) {
  EXPECT_EQ(to_string(PositionMask::none), "full");
  AttentionSpec spec;
  spec.mask = PositionMask::none;
  spec.window_left = 8;
  try {
    spec.validate();
    FAIL();
  } catch (const SpecError& error) {
    EXPECT_NE(std::string(error.what()).find("'full'"), std::string::npos) << error.what();
  }
}

TEST(AttentionSpec, ValidateChecksHeadsAndDim) {
  AttentionSpec spec;
  spec.heads = 12;
  spec.kv_heads = 5;
  EXPECT_THROW(spec.validate(), SpecError);
  spec.kv_heads = 4;
  EXPECT_NO_THROW(spec.validate());
  spec.head_dim = 0;
  EXPECT_THROW(spec.validate(), SpecError);
  EXPECT_THROW(spec.to_string(), SpecError);
}

TEST(AttentionSpec, DefaultScaleIsInverseSqrtOfHeadDim) {
  EXPECT_FLOAT_EQ(default_scale(64), 0.125f);
  EXPECT_FLOAT_EQ(default_scale(128), 1.0f / std::sqrt(128.0f));
}

}  // namespace
}  // namespace attnforge
