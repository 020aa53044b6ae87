// Every algorithm form under its x86 preset, JIT-compiled through the
// Generator, against the reference: every mask kind, MHA/GQA/MQA,
// cross-attention, odd sizes that are not multiples of any tile.
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "kernel_support/kernel_memory.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "tests/support/attention_case.h"
#include "tests/support/jit_reference.h"
#include "tests/support/target_presets.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseShape;
using testing::Comparison;
using testing::expect_jit_matches_reference;
using testing::Layout;

using testing::kernel_target;
using testing::kernel_target_has_presets;
using testing::kernels_run_here;
using testing::preset_for;

struct FormCase {
  const char* form;
  const char* spec;
};

class FormsJit : public ::testing::TestWithParam<FormCase> {};

TEST_P(FormsJit, MatchesReferenceOnOddShapes) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  // Lengths around and across tile sizes, Lq != Lk both ways, Lq = 1.
  expect_jit_matches_reference(AttentionSpec::parse(GetParam().spec), preset_for(GetParam().form),
                               {{2, 7, 33}, {1, 1, 77}, {1, 100, 9}, {3, 65, 130}, {1, 1, 1}},
                               {Layout::bhld, Layout::blhd}, 3);
}

std::vector<FormCase> form_cases() {
  const char* specs[] = {"full.mha2.d64.f32",
                         "causal.mha2.d64.f32",
                         "causal.br.gqa4x2.d64.f32",
                         "window9_3.br.mqa2.d32.f32",
                         "causal.kpad.alibi.mha2.d64.f32",
                         "full.bias.gqa4x2.d64.f16",
                         "causal.br.kpad.mha2.d128.bf16"};
  std::vector<FormCase> cases;
  for (const char* form : {"online", "fused", "materialized"}) {
    for (const char* spec : specs) cases.push_back({form, spec});
  }
  return cases;
}

// Runs `schedule` on each shape and compares the output with the reference.
void expect_reference(const AttentionSpec& spec, const schedules::Schedule& schedule,
                      const std::vector<CaseShape>& shapes, uint32_t seed) {
  const std::string json = schedule.to_json().dump();
  JitAttention kernel(spec, kernel_target(), {{"schedule", json}});
  if (!kernels_run_here()) return;
  for (CaseShape shape : shapes) {
    AttentionCase c(spec, shape, {.seed = seed});
    kernel.run(c.arguments());
    Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << spec.to_string() << " " << json << " Lq" << shape.q_len << " Lk"
                           << shape.kv_len << ": " << result.first_failure;
  }
}

// Short query lengths split over keys: each split's state merged after.
TEST(FormsJitKvSplits, SplitStatesMergeToTheReference) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const char* specs[] = {"full.mha2.d64.f32", "causal.br.kpad.gqa4x2.d64.f32",
                         "window40_0.br.alibi.mqa2.d32.f16"};
  for (const char* text : specs) {
    AttentionSpec spec = AttentionSpec::parse(text);
    for (int splits : {2, 4}) {
      schedules::Schedule schedule = schedules::load_preset(preset_for("online"));
      schedule.kv_splits = splits;
      schedule.parallel.push_back(schedules::ParallelLoop::kv_splits);
      // Lq = 1 (decoding), a few rows, and more splits than key blocks.
      expect_reference(spec, schedule, {{3, 1, 1000}, {2, 5, 333}, {1, 2, 7}}, 11);
    }
  }
}

// P.V a chunk of keys at a time: chunks that divide the online form's key
// block, and the fused form's chunks over all keys with a partial last chunk
// and masked ones skipped.
TEST(FormsJitPvChunks, ChunkSumsAddUpToTheReference) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const char* specs[] = {"full.mha2.d64.f32", "causal.br.kpad.gqa4x2.d64.f32",
                         "window9_3.alibi.mqa2.d32.f16"};
  for (const char* form : {"online", "fused"}) {
    for (const char* text : specs) {
      AttentionSpec spec = AttentionSpec::parse(text);
      schedules::Schedule schedule = schedules::load_preset(preset_for(form));
      schedule.pv_chunk = 16;
      schedule.unroll = 2;
      expect_reference(spec, schedule, {{2, 7, 33}, {1, 1, 1}, {3, 65, 130}}, 13);
    }
  }
  // Chunks in each of the online form's key splits, tiles at root, and a
  // P.V tile of its own.
  schedules::Schedule split = schedules::load_preset(preset_for("online"));
  split.pv_chunk = 32;
  split.kv_splits = 2;
  split.parallel.push_back(schedules::ParallelLoop::kv_splits);
  split.q_copy_at = schedules::StoreLevel::root;
  split.pv_rows = 2;
  split.pv_vectors = 1;
  expect_reference(AttentionSpec::parse("causal.kpad.mha2.d64.f32"), split,
                   {{2, 5, 333}, {3, 1, 1000}, {1, 130, 65}}, 17);
}

// A JIT run takes its tiles from kernel_memory, as the AOT runtime does, so
// the tuner measures what ships. One thread: the tiles are this thread's.
TEST(FormsJitMemory, TilesComeFromKernelMemory) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  AttentionSpec spec = AttentionSpec::parse("full.mha2.d64.f32");
  schedules::Schedule schedule = schedules::load_preset(preset_for("fused"));
  schedule.query_tile = 64;  // a 64 x 300 tile of logits: over 64 KB
  JitAttention kernel(spec, kernel_target(), {{"schedule", schedule.to_json().dump()}});
  if (!kernels_run_here()) return;
  JitAttention::set_num_threads(1);
  const size_t kept = kernel_memory_cached_bytes();
  AttentionCase c(spec, {1, 64, 300}, {.seed = 5});
  kernel.run(c.arguments());
  JitAttention::set_num_threads(0);
  EXPECT_GT(kernel_memory_cached_bytes(), kept);
  EXPECT_TRUE(c.compare().ok);
}

INSTANTIATE_TEST_SUITE_P(Presets, FormsJit, ::testing::ValuesIn(form_cases()),
                         [](const ::testing::TestParamInfo<FormCase>& info) {
                           return testing::test_name_of(std::string(info.param.form) + "_" +
                                                        info.param.spec);
                         });

}  // namespace
}  // namespace attnforge
