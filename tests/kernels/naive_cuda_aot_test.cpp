// The naive CUDA kernels compile and link here. Where a CUDA device exists
// they must match the reference; where none does, a call must fail with an
// error code (and Halide's message), never crash.
#include <gtest/gtest.h>

#include <string>

#include "attnforge_naive_cuda_table.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::AttentionCase;

std::string last_error;

extern "C" void record_error(void*, const char* message) {
  last_error = message;
}

class NaiveCudaKernel : public ::testing::TestWithParam<attnforge_naive_cuda_entry> {};

TEST_P(NaiveCudaKernel, RunsCorrectlyOrReportsNoDevice) {
  halide_set_error_handler(record_error);
  AttentionSpec spec = AttentionSpec::parse(GetParam().spec);
  AttentionCase c(spec, {2, 7, 33});
  KernelArgv argv = kernel_argv(spec, c.arguments());
  last_error.clear();
  int status = GetParam().argv_entry(argv.data());
  if (status != 0) {
    EXPECT_NE(last_error.find("CUDA"), std::string::npos) << last_error;
    GTEST_SKIP() << "no CUDA device: " << last_error;
  }
  halide_copy_to_host(nullptr, c.arguments().out);
  testing::Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << result.first_failure;
}

INSTANTIATE_TEST_SUITE_P(Table, NaiveCudaKernel, ::testing::ValuesIn(attnforge_naive_cuda_table),
                         [](const auto& info) { return testing::test_name_of(info.param.spec); });

}  // namespace
}  // namespace attnforge
