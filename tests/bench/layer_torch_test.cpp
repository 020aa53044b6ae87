// The layer against torch.nn.MultiheadAttention (batch_first, eval mode) on
// the same random weights, where the project's Python imports torch
// (scripts/bootstrap --with-torch); skipped otherwise.
#include <gtest/gtest.h>

#include <cstring>

#include "bench/layer_inputs.h"
#include "bench/output_check.h"
#include "bench/torch_peer.h"
#include "generators/jit_layer.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

TEST(LayerTorch, MatchesMultiheadAttention) {
  if (!bench::python_has_torch(ATTNFORGE_PYTHON)) GTEST_SKIP() << "no torch in " ATTNFORGE_PYTHON;
  if (!testing::kernels_run_here()) GTEST_SKIP() << "the host cannot run the kernel target";
  for (const char* text : {"self.dm64.full.mha4.d16.f32", "self.dm96.causal.mha3.d32.f32"}) {
    const LayerSpec spec = LayerSpec::parse(text);
    {
      const std::string schedule = testing::kernel_target_has_presets()
                                       ? testing::preset_for("online")
                                       : std::string("naive");
      JitLayer kernel(spec, testing::kernel_target(), {{"schedule", schedule}});
      for (bench::LayerShape shape : {bench::LayerShape{2, 37}, bench::LayerShape{1, 1}}) {
        bench::LayerInputs in(spec, shape, 11);
        kernel.run(in.args);
        std::memcpy(in.expected.data(), in.out.data(), in.out.size_in_bytes());
        bench::TorchResult torch =
            bench::run_torch_mha(ATTNFORGE_PYTHON, spec, shape.batch, shape.len, 1, in, -1.0);
        ASSERT_TRUE(torch.error.empty()) << torch.error;
        // Both sides sum in f32 over d_model and H D in different orders; the
        // benchmarks' check (the tuner's) takes that.
        autotune::CheckResult check =
            bench::check_output(torch.output, in.expected, spec.attention.dtype);
        EXPECT_TRUE(check.ok) << text << " " << schedule << " B" << shape.batch << " L" << shape.len
                              << ": " << check.detail;
      }
    }
  }
}

}  // namespace
}  // namespace attnforge
