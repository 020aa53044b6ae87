// The AOT CUDA kernels (naive and the CUDA presets) compile and link here.
// Where a CUDA device exists they must match the double reference on odd
// sizes (L = 1, lengths off every tile, Lq != Lk both ways); where none does,
// a call must fail with an error code and Halide's message, never crash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/cuda_kernel_tables.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseShape;
using testing::CudaKernel;

std::string last_error;

extern "C" void record_error(void*, const char* message) {
  last_error = message;
}

class CudaAotKernel : public ::testing::TestWithParam<CudaKernel> {};

TEST_P(CudaAotKernel, MatchesTheReferenceOrReportsNoDevice) {
  halide_set_error_handler(record_error);
  const AttentionSpec spec = AttentionSpec::parse(GetParam().spec);
  const std::vector<CaseShape> shapes = {{2, 7, 33}, {1, 1, 1}, {3, 45, 19}, {1, 130, 70}};
  for (const CaseShape& shape : shapes) {
    SCOPED_TRACE(::testing::Message()
                 << "B " << shape.batch << " Lq " << shape.q_len << " Lk " << shape.kv_len);
    AttentionCase c(spec, shape);
    mark_host_inputs_dirty(c.arguments());
    KernelArgv argv = kernel_argv(spec, c.arguments());
    last_error.clear();
    int status = 0;
    {
      KernelStorageTypes as_taken(c.arguments(), true);
      status = GetParam().argv_entry(argv.data());
    }
    if (status != 0) {
      EXPECT_NE(last_error.find("CUDA"), std::string::npos) << last_error;
      GTEST_SKIP() << "no CUDA device: " << last_error;
    }
    halide_copy_to_host(nullptr, c.arguments().out);
    if (c.arguments().weights) halide_copy_to_host(nullptr, c.arguments().weights);
    if (c.arguments().lse) halide_copy_to_host(nullptr, c.arguments().lse);
    testing::Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << result.first_failure;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, CudaAotKernel, ::testing::ValuesIn(testing::all_cuda_kernels()),
                         [](const auto& info) {
                           return info.param.set + "_" + testing::test_name_of(info.param.spec);
                         });

}  // namespace
}  // namespace attnforge
