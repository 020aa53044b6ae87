// The key ranges of a mask rule (algorithm/modifier_key_ranges.h), computed
// by their own kernel: each entry against the rule evaluated in plain loops;
// and the attention forms that skip blocks by them against the double
// reference, on rules that leave most blocks of long rows unseen, one of them
// per head; tables that skip nothing, kept, or of the wrong shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "algorithm/modifier_key_ranges.h"
#include "algorithm/modifier_registry.h"
#include "generators/jit_attention.h"
#include "generators/jit_compile.h"
#include "tests/support/attention_case.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseShape;
using testing::Comparison;
using testing::every_x86_form;
using testing::kernel_target;
using testing::kernel_target_has_presets;
using testing::kernels_run_here;
using testing::preset_for;
using Index = testing::HostTensor::Extents;

const halide_type_t kInt32(halide_type_int, 32);

// Documents of `length` positions, shifted by 3 per sequence.
int document_of(int position, int b, int length) {
  return (position + 3 * b) / length;
}

// A document mask read from two tensors, as examples/mods/document.cpp.
AttentionSpec with_document_rule(const char* base) {
  Modifier m;
  m.tensor("query_document", Halide::Int(32), {ModifierExtent::queries, ModifierExtent::batch});
  m.tensor("key_document", Halide::Int(32), {ModifierExtent::keys, ModifierExtent::batch});
  m.mask = [](const ModifierIndex& at, const ModifierTensors& t) {
    return t("query_document")(at.query, at.batch) == t("key_document")(at.key, at.batch);
  };
  register_modifier("rangesdocument", "0000d0c5", m);
  AttentionSpec spec = AttentionSpec::parse(base);
  spec.modifier = "rangesdocument";
  spec.modifier_hash = "0000d0c5";
  return spec;
}

// A rule that reads the head and no tensor: head h sees the keys of its
// query's stripe of 6 + h positions, and one key of every 7 before it.
bool striped(int h, int i, int j) {
  const int stripe = 6 + h;
  return j / stripe == i / stripe || (j < i && j % 7 == 0);
}

AttentionSpec with_striped_rule(const char* base) {
  Modifier m;
  m.mask = [](const ModifierIndex& at, const ModifierTensors&) {
    const Halide::Expr stripe = 6 + at.head;
    return at.key / stripe == at.query / stripe || (at.key < at.query && at.key % 7 == 0);
  };
  register_modifier("rangesstriped", "00057e1d", m);
  AttentionSpec spec = AttentionSpec::parse(base);
  spec.modifier = "rangesstriped";
  spec.modifier_hash = "00057e1d";
  return spec;
}

void add_documents(AttentionCase& c, CaseShape shape, int length) {
  for (int extent : {shape.q_len, shape.kv_len}) {
    c.add_modifier_tensor(kInt32, {extent, shape.batch},
                          [&](const Index& at) { return document_of(at[0], at[1], length); });
  }
  c.set_reference_modifier(nullptr, [length](int b, int, int i, int j) {
    return document_of(i, b, length) == document_of(j, b, length);
  });
}

void add_stripes(AttentionCase& c) {
  c.set_reference_modifier(nullptr, [](int, int h, int i, int j) { return striped(h, i, j); });
}

// Entry (rows [i, i + 2^level) below Lq) of `ranges` against `sees`, the rule in plain loops.
void expect_table_holds_the_rule(const Halide::Runtime::Buffer<int32_t>& ranges, int q_len,
                                 int kv_len, const std::function<bool(int, int, int, int)>& sees) {
  ASSERT_EQ(ranges.dim(0).extent(), kKeyRangeValues);
  ASSERT_EQ(ranges.dim(1).extent(), q_len);
  ASSERT_EQ(ranges.dim(2).extent(), kKeyRangeLevels);
  for (int b = 0; b < ranges.dim(4).extent(); ++b) {
    for (int h = 0; h < ranges.dim(3).extent(); ++h) {
      for (int level = 0; level < kKeyRangeLevels; ++level) {
        for (int i = 0; i < q_len; ++i) {
          int begin = kv_len, end = 0;
          for (int row = i; row < std::min(q_len, i + (1 << level)); ++row) {
            for (int j = 0; j < kv_len; ++j) {
              if (!sees(b, h, row, j)) continue;
              begin = std::min(begin, j);
              end = std::max(end, j + 1);
            }
          }
          ASSERT_EQ(ranges(key_range_begin, i, level, h, b), begin)
              << "b " << b << " h " << h << " level " << level << " row " << i;
          ASSERT_EQ(ranges(key_range_end, i, level, h, b), end)
              << "b " << b << " h " << h << " level " << level << " row " << i;
        }
      }
    }
  }
}

TEST(KeyRangesJit, EachEntryHoldsTheKeysItsRowsSee) {
  const AttentionSpec documents = with_document_rule("full.mha2.d32.f32");
  const AttentionSpec stripes = with_striped_rule("full.mha3.d32.f32");
  EXPECT_FALSE(mask_rule_reads_head(documents));
  EXPECT_TRUE(mask_rule_reads_head(stripes));
  JitAttention document_kernel(documents, kernel_target(), {{"schedule", "naive"}});
  JitAttention stripe_kernel(stripes, kernel_target(), {{"schedule", "naive"}});
  if (!kernels_run_here()) GTEST_SKIP() << "the kernels run on this host's ISA only";
  for (CaseShape shape : {CaseShape{2, 37, 300}, CaseShape{1, 1, 1}, CaseShape{3, 300, 17}}) {
    AttentionCase d(documents, shape, {.seed = 2});
    add_documents(d, shape, 11);
    expect_table_holds_the_rule(
        document_kernel.key_ranges(d.arguments()), shape.q_len, shape.kv_len,
        [](int b, int, int i, int j) { return document_of(i, b, 11) == document_of(j, b, 11); });
    AttentionCase s(stripes, shape, {.seed = 2});
    const Halide::Runtime::Buffer<int32_t> ranges = stripe_kernel.key_ranges(s.arguments());
    EXPECT_EQ(ranges.dim(3).extent(), 3);
    expect_table_holds_the_rule(ranges, shape.q_len, shape.kv_len,
                                [](int, int h, int i, int j) { return striped(h, i, j); });
  }
}

// Long rows whose rule hides most blocks, tiles that group heads, and rows
// that see no key: every form skips by the table and matches the reference.
TEST(KeyRangesJit, FormsThatSkipBlocksMatchTheReference) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  struct Rule {
    AttentionSpec spec;
    std::function<void(AttentionCase&, CaseShape)> prepare;
  };
  const std::vector<Rule> rules = {
      {with_document_rule("causal.mha2.d32.f32"),
       [](AttentionCase& c, CaseShape shape) { add_documents(c, shape, 37); }},
      {with_document_rule("full.kpad.gqa4x2.d32.f16"),
       [](AttentionCase& c, CaseShape shape) { add_documents(c, shape, 37); }},
      {with_striped_rule("causal.br.gqa4x2.d64.f32"),
       [](AttentionCase& c, CaseShape) { add_stripes(c); }},
  };
  for (const Rule& rule : rules) {
    for (const std::string& schedule : every_x86_form(rule.spec)) {
      JitAttention kernel(rule.spec, kernel_target(), {{"schedule", schedule}});
      if (!kernels_run_here()) continue;
      for (CaseShape shape : {CaseShape{2, 150, 700}, CaseShape{1, 1, 513}, CaseShape{2, 70, 41}}) {
        AttentionCase c(rule.spec, shape, {.seed = 9});
        rule.prepare(c, shape);
        kernel.run(c.arguments());
        const Comparison result = c.compare();
        EXPECT_TRUE(result.ok) << rule.spec.to_string() << " " << schedule << " Lq" << shape.q_len
                               << " Lk" << shape.kv_len << ": " << result.first_failure;
      }
    }
  }
}

// A table computed once serves later calls; one that skips nothing gives the
// same output; a table of another shape, or one for a spec without a mask
// rule, is refused by name.
TEST(KeyRangesJit, KeptAndUnskippedTablesAndBadOnes) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const AttentionSpec spec = with_document_rule("causal.mha2.d32.f32");
  JitAttention kernel(spec, kernel_target(), {{"schedule", preset_for("online")}});
  if (!kernels_run_here()) GTEST_SKIP() << "the kernels run on this host's ISA only";
  const CaseShape shape{2, 90, 200};
  AttentionCase c(spec, shape, {.seed = 4});
  add_documents(c, shape, 29);
  Halide::Runtime::Buffer<int32_t> kept = kernel.key_ranges(c.arguments());
  Halide::Runtime::Buffer<int32_t> every_key = kernel.key_ranges_of_every_key(c.arguments());
  for (Halide::Runtime::Buffer<int32_t>* table : {&kept, &every_key}) {
    KernelArguments args = c.arguments();
    args.modifier_key_ranges = table->raw_buffer();
    kernel.run(args);
    const Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << result.first_failure;
  }

  Halide::Runtime::Buffer<int32_t> short_table(kKeyRangeValues, shape.q_len - 1, kKeyRangeLevels, 1,
                                               shape.batch);
  KernelArguments args = c.arguments();
  args.modifier_key_ranges = short_table.raw_buffer();
  try {
    kernel.run(args);
    ADD_FAILURE() << "a table of Lq - 1 rows was taken";
  } catch (const KernelError& error) {
    EXPECT_NE(std::string(error.what()).find("mod_key_ranges"), std::string::npos) << error.what();
  }

  const AttentionSpec plain = AttentionSpec::parse("causal.mha2.d32.f32");
  JitAttention plain_kernel(plain, kernel_target(), {{"schedule", preset_for("online")}});
  AttentionCase p(plain, shape, {.seed = 4});
  KernelArguments plain_args = p.arguments();
  plain_args.modifier_key_ranges = kept.raw_buffer();
  try {
    plain_kernel.run(plain_args);
    ADD_FAILURE() << "a spec without a mask rule took a table";
  } catch (const SpecError& error) {
    EXPECT_NE(std::string(error.what()).find("modifier_key_ranges"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace attnforge
