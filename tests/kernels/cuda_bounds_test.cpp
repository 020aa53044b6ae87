// Every AOT CUDA kernel, asked in a bounds query (inputs without data) which
// region of each input it reads: Halide bounds that region on the host,
// before any launch, and a device run refuses to start when it leaves the
// input. A query needs no device, only a driver that loads the kernels: the
// test runs with a stand-in driver that has one device and runs nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "spec/kernel_arguments.h"
#include "tests/kernels/cuda_kernel_tables.h"
#include "tests/support/attention_case.h"
#include "tests/support/test_names.h"

namespace attnforge {
namespace {

using testing::AttentionCase;
using testing::CaseShape;

std::string last_error;

extern "C" void record_error(void*, const char* message) {
  last_error = message;
}

class CudaKernelBounds : public ::testing::TestWithParam<testing::CudaKernel> {};

TEST_P(CudaKernelBounds, ReadEveryInputWithinItsExtent) {
  halide_set_error_handler(record_error);
  const AttentionSpec spec = AttentionSpec::parse(GetParam().spec);
  for (const CaseShape& shape : {CaseShape{2, 7, 33}, CaseShape{1, 1, 1}, CaseShape{1, 130, 70}}) {
    SCOPED_TRACE(::testing::Message()
                 << "B " << shape.batch << " Lq " << shape.q_len << " Lk " << shape.kv_len);
    AttentionCase c(spec, shape);
    KernelArguments& args = c.arguments();
    KernelStorageTypes as_taken(args, true);
    struct Query {
      const char* name;
      halide_buffer_t* buffer;
      std::vector<halide_dimension_t> dims;
      uint8_t* host;
    };
    std::vector<Query> queries;
    for (auto [name, buffer] : {std::pair{"q", args.q},
                                {"k", args.k},
                                {"v", args.v},
                                {"key_lengths", args.key_lengths},
                                {"bias", args.bias},
                                {"alibi_slopes", args.alibi_slopes}}) {
      if (!buffer) continue;
      queries.push_back(
          {name, buffer, {buffer->dim, buffer->dim + buffer->dimensions}, buffer->host});
      buffer->host = nullptr;
    }
    KernelArgv argv = kernel_argv(spec, c.arguments());
    last_error.clear();
    EXPECT_EQ(GetParam().argv_entry(argv.data()), 0) << last_error;
    for (Query& query : queries) {
      for (int n = 0; n < query.buffer->dimensions; ++n) {
        const halide_dimension_t& read = query.buffer->dim[n];
        const halide_dimension_t& held = query.dims[n];
        EXPECT_GE(read.min, held.min) << query.name << " dim " << n;
        EXPECT_LE(read.min + read.extent, held.min + held.extent) << query.name << " dim " << n;
      }
      std::copy(query.dims.begin(), query.dims.end(), query.buffer->dim);
      query.buffer->host = query.host;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, CudaKernelBounds, ::testing::ValuesIn(testing::all_cuda_kernels()),
                         [](const auto& info) {
                           return info.param.set + "_" + testing::test_name_of(info.param.spec);
                         });

}  // namespace
}  // namespace attnforge
