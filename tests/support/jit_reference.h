// A JIT-compiled attention kernel against the double reference over a list
// of shapes and layouts: the check the schedule tests share.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "generators/jit_attention.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_targets.h"

namespace attnforge::testing {

// Compiles `spec` under `schedule` (JSON) for kernel_target(), runs it on a
// case per shape and layout (inputs from `seed`) where the host can, and
// expects each to match the reference; a failure names the spec, the
// schedule and the shape.
inline void expect_jit_matches_reference(const AttentionSpec& spec, const std::string& schedule,
                                         std::initializer_list<CaseShape> shapes,
                                         std::initializer_list<Layout> layouts, uint32_t seed) {
  JitAttention kernel(spec, kernel_target(), {{"schedule", schedule}});
  if (!kernels_run_here()) return;
  for (CaseShape shape : shapes) {
    for (Layout layout : layouts) {
      AttentionCase c(spec, shape, {.layout = layout, .seed = seed});
      kernel.run(c.arguments());
      const Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << spec.to_string() << " " << schedule << " B" << shape.batch << " Lq"
                             << shape.q_len << " Lk" << shape.kv_len << ": " << result.first_failure
                             << " (max error " << result.max_error << ")";
    }
  }
}

// A KV cache's shapes (decoding over odd lengths, a few queries, Lq > Lk,
// one key) in both layouts: the check of the cache variants (paged, 8-bit).
inline void expect_cache_reads_match_reference(const char* spec_text, const std::string& schedule,
                                               uint32_t seed) {
  expect_jit_matches_reference(AttentionSpec::parse(spec_text), schedule,
                               {{3, 1, 77}, {2, 5, 130}, {1, 40, 19}, {1, 1, 1}},
                               {Layout::bhld, Layout::blhd}, seed);
}

}  // namespace attnforge::testing
