// Paged KV caches against the reference: each sequence's K/V pages at
// shuffled places, -1 table entries past its length, under the presets and
// the decoding schedules, at page sizes that do and do not divide the lengths.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "schedules/presets.h"
#include "tests/support/attention_case.h"
#include "tests/support/host_presets.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseShape;
using testing::Layout;

void expect_reference(const char* spec_text, const std::string& schedule) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  JitAttention kernel(spec, Halide::get_host_target(), {{"schedule", schedule}});
  const CaseShape shapes[] = {{3, 1, 77}, {2, 5, 130}, {1, 40, 19}, {1, 1, 1}};
  for (CaseShape shape : shapes) {
    for (Layout layout : {Layout::bhld, Layout::blhd}) {
      AttentionCase c(spec, shape, {.layout = layout, .seed = 23});
      kernel.run(c.arguments());
      testing::Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << spec_text << " " << schedule << " B" << shape.batch << " Lq"
                             << shape.q_len << " Lk" << shape.kv_len << ": " << result.first_failure
                             << " (max error " << result.max_error << ")";
    }
  }
}

TEST(PagedJit, NaiveReadsShuffledPages) {
  expect_reference("causal.br.kpad.page16.gqa4x2.d32.f32", "naive");
}

TEST(PagedJit, PresetsReadShuffledPages) {
  if (!testing::host_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const std::string width = testing::preset_for("online").substr(7);  // avx2 or avx512
  expect_reference("causal.br.kpad.page16.gqa4x2.d64.f32", "decode_" + width);
  expect_reference("window9_3.br.kpad.page8.alibi.mqa2.d32.bf16", "decode_" + width);
  expect_reference("full.kpad.page32.mha2.d64.f16", testing::preset_for("online"));
  expect_reference("causal.kpad.page1.mha2.d32.f32", testing::preset_for("materialized"));
}

}  // namespace
}  // namespace attnforge
