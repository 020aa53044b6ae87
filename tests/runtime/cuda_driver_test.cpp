// Runs with only a stand-in libcuda.so.1 on the library path (no
// libcuda.so, no device): the runtime and the Halide runtime inside the
// CUDA kernels both find it and report that there is no device, without
// crashing.
#include <HalideRuntime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnforge/attention.h"
#include "attnforge/kernel_table.h"
#include "spec/backward_arguments.h"
#include "spec/kernel_arguments.h"
#include "tests/runtime/tensor_views.h"
#include "tests/support/attention_case.h"
#include "tests/support/backward_case.h"

namespace attnforge {
namespace {

std::string halide_message;
extern "C" void record_error(void*, const char* message) {
  halide_message += message;
}

TEST(CudaDriver, TheRuntimeFindsLibcudaSo1AndReportsNoDevice) {
  testing::CudaCausalCall call;
  Status status = attention(call.q, call.kv, call.kv, call.out, call.options);
  EXPECT_EQ(status.code, ErrorCode::no_device);
  // Found: "not found" would name the missing library instead.
  EXPECT_NE(status.message.find("the driver reports none"), std::string::npos) << status.message;
}

TEST(CudaDriver, HalideKernelsFindLibcudaSo1AndFailCleanly) {
  halide_set_error_handler(record_error);
  int cuda_kernels = 0;
  for (int n = 0; n < attnforge_kernel_package.count; ++n) {
    const KernelEntry& entry = attnforge_kernel_package.entries[n];
    if (!entry.cuda) continue;
    ++cuda_kernels;
    const AttentionSpec spec = AttentionSpec::parse(entry.spec);
    halide_message.clear();
    if (entry.backward) {
      // The GPU row form: f32 and f16, no bf16 bits to pass.
      testing::BackwardCase c(spec, {1, 5, 9});
      mark_host_inputs_dirty(c.arguments());
      KernelArgv argv = backward_argv(spec, c.arguments());
      EXPECT_NE(entry.argv(argv.data()), 0) << entry.function;
    } else {
      testing::AttentionCase c(spec, {1, 5, 9});
      mark_host_inputs_dirty(c.arguments());
      KernelArgv argv = kernel_argv(spec, c.arguments());
      KernelStorageTypes as_taken(c.arguments(), true);  // bf16 as its bits
      EXPECT_NE(entry.argv(argv.data()), 0) << entry.function;
    }
    // The stand-in's cuInit ran: Halide's own lookup (libcuda.so) would
    // have found nothing and said so instead.
    EXPECT_NE(halide_message.find("cuInit"), std::string::npos) << halide_message;
    EXPECT_EQ(halide_message.find("not found"), std::string::npos) << halide_message;
  }
  EXPECT_GT(cuda_kernels, 0);
}

}  // namespace
}  // namespace attnforge
