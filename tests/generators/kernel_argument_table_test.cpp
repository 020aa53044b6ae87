// The attention and layer Generators declare exactly their argument tables
// (spec/kernel_arguments.h, spec/layer_arguments.h): the same names,
// directions, element types and dimensions, in the table's order, for specs
// with every optional argument and with none.
#include <Halide.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spec/attention_spec.h"
#include "spec/dtype_traits.h"
#include "spec/kernel_arguments.h"
#include "spec/layer_arguments.h"

namespace attnforge::testing {
namespace {

using Halide::Internal::ArgInfoDirection;

template <typename Slot>
Halide::Type element_type(const Slot& slot, DType dtype, KvStorage cache) {
  switch (slot.element) {
    case ArgumentElement::storage:
      return Halide::Type(traits_of(dtype).halide_type);
    case ArgumentElement::cache:
      if (cache == KvStorage::int8) return Halide::Int(8);
      if (cache == KvStorage::fp8_e4m3) return Halide::UInt(8);
      return Halide::Type(traits_of(dtype).halide_type);
    case ArgumentElement::int32:
      return Halide::Int(32);
    case ArgumentElement::float32:
      return Halide::Float(32);
  }
  return {};
}

// kvfp8's scales are one per KV head; every other rank is the table's.
template <typename Slot>
int expected_dimensions(const Slot& slot, KvStorage cache) {
  const std::string name = slot.name;
  const bool scales = name == "k_scale" || name == "v_scale";
  return scales && cache == KvStorage::fp8_e4m3 ? 1 : slot.dimensions;
}

template <typename Slot>
void expect_declared(const std::string& generator_name, const std::string& text,
                     const std::vector<Slot>& expected, DType dtype,
                     KvStorage cache = KvStorage::dtype) {
  auto generator = Halide::Internal::GeneratorRegistry::create(
      generator_name, Halide::GeneratorContext(Halide::get_host_target()));
  generator->set_generatorparam_value("spec", text);
  const auto declared = generator->arginfos();
  ASSERT_EQ(declared.size(), expected.size()) << text;
  for (size_t n = 0; n < expected.size(); ++n) {
    const Slot& slot = expected[n];
    const auto& arg = declared[n];
    EXPECT_EQ(arg.name, slot.name) << text << " argument " << n;
    EXPECT_EQ(arg.dir, slot.output ? ArgInfoDirection::Output : ArgInfoDirection::Input)
        << text << " " << slot.name;
    EXPECT_EQ(arg.dimensions, expected_dimensions(slot, cache)) << text << " " << slot.name;
    ASSERT_EQ(arg.types.size(), 1u) << text << " " << slot.name;
    EXPECT_EQ(arg.types[0], element_type(slot, dtype, cache)) << text << " " << slot.name;
  }
}

void expect_attention_takes_the_table(const std::string& text) {
  const AttentionSpec spec = AttentionSpec::parse(text);
  std::vector<KernelArgumentSlot> expected;
  for_each_kernel_argument(spec, [&](const KernelArgumentSlot& slot) { expected.push_back(slot); });
  expect_declared("attention", text, expected, spec.dtype, spec.kv_storage);
}

void expect_layer_takes_the_table(const std::string& text) {
  const LayerSpec spec = LayerSpec::parse(text);
  std::vector<LayerArgumentSlot> expected;
  for_each_layer_argument(spec, [&](const LayerArgumentSlot& slot) { expected.push_back(slot); });
  expect_declared("mha_layer", text, expected, spec.attention.dtype);
}

TEST(KernelArgumentTable, TheGeneratorDeclaresTheTableInOrder) {
  expect_attention_takes_the_table("full.mha2.d16.f32");
  expect_attention_takes_the_table("causal.br.kpad.alibi.gqa4x2.d32.bf16");
  expect_attention_takes_the_table("full.kpad.bias.mha2.d16.f16.weights");
  expect_attention_takes_the_table("causal.br.kpad.page16.gqa4x2.d32.f32");
  expect_attention_takes_the_table("causal.br.kpad.alibi.gqa4x2.d32.bf16.kv8");
  expect_attention_takes_the_table("causal.br.kpad.page16.gqa4x2.d32.f32.kv8");
  expect_attention_takes_the_table("causal.br.kpad.alibi.gqa4x2.d32.bf16.kvfp8");
  expect_attention_takes_the_table("causal.br.kpad.page16.gqa4x2.d32.f32.kvfp8");
}

TEST(KernelArgumentTable, TheLayerGeneratorDeclaresItsTableInOrder) {
  expect_layer_takes_the_table("self.dm64.causal.mha4.d16.f32");
  expect_layer_takes_the_table("self.dm64.nobias.window8_0.br.kpad.mqa4.d16.f32");
  expect_layer_takes_the_table("cross.dm96.avgweights.full.bias.mha2.d48.f32.weights");
  expect_layer_takes_the_table("cross.dm768.causal.br.kpad.alibi.gqa12x4.d64.f32.weights");
}

}  // namespace
}  // namespace attnforge::testing
