// The naive AOT kernels for the host CPU, called through their argv entry
// points exactly as the runtime will, against the reference.
#include <gtest/gtest.h>

#include "attnforge_naive_cpu_table.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseShape;
using testing::Layout;

class NaiveCpuKernel : public ::testing::TestWithParam<attnforge_naive_cpu_entry> {};

TEST_P(NaiveCpuKernel, MatchesReference) {
  AttentionSpec spec = AttentionSpec::parse(GetParam().spec);
  for (CaseShape shape : {CaseShape{2, 7, 33}, CaseShape{3, 1, 20}, CaseShape{1, 40, 9}}) {
    for (Layout layout : {Layout::bhld, Layout::blhd}) {
      AttentionCase c(spec, shape, {.layout = layout});
      KernelArgv argv = kernel_argv(spec, c.arguments());
      ASSERT_EQ(GetParam().argv_entry(argv.data()), 0) << GetParam().spec;
      testing::Comparison result = c.compare();
      EXPECT_TRUE(result.ok) << GetParam().spec << " Lq" << shape.q_len << " Lk" << shape.kv_len
                             << ": " << result.first_failure;
    }
  }
}

extern "C" void ignore_error(void*, const char*) {}

TEST_P(NaiveCpuKernel, RejectsAWrongShapeWithAnErrorCode) {
  // Halide's default handler aborts; an embedding program installs its own.
  halide_set_error_handler(ignore_error);
  AttentionSpec spec = AttentionSpec::parse(GetParam().spec);
  AttentionSpec wrong = spec;
  wrong.head_dim = spec.head_dim / 2;
  AttentionCase c(wrong, {1, 3, 5});
  KernelArgv argv = kernel_argv(wrong, c.arguments());
  EXPECT_NE(GetParam().argv_entry(argv.data()), 0);
}

INSTANTIATE_TEST_SUITE_P(Table, NaiveCpuKernel, ::testing::ValuesIn(attnforge_naive_cpu_table),
                         [](const auto& info) { return testing::test_name_of(info.param.spec); });

}  // namespace
}  // namespace attnforge
