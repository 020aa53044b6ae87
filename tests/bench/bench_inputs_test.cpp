// A benchmark case in a 16-bit storage dtype: the kernels read and write that
// dtype, every f32 peer reads the same values, and an output the kernels do
// not write fails the check.
#include "bench/bench_inputs.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bench/output_check.h"
#include "generators/jit_attention.h"
#include "spec/dtype_traits.h"
#include "spec/half_precision.h"

namespace attnforge::bench {
namespace {

const Halide::Target kAvx2("x86-64-linux-avx-avx2-f16c-fma-sse41");

TEST(BenchInputs, SixteenBitSpecsRunInTheirStorageDtype) {
  for (const char* text : {"causal.gqa4x2.d32.f16", "full.mqa2.d32.bf16"}) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    Shape shape;
    shape.batch = 1;
    shape.q_len = 19;
    shape.kv_len = 33;
    shape.heads = spec.heads;
    shape.head_dim = spec.head_dim;
    BenchInputs in(spec, shape, 3);
    EXPECT_EQ(in.args.q->type, halide_type_of(spec.dtype)) << text;
    EXPECT_EQ(in.args.out->type, halide_type_of(spec.dtype)) << text;
    for (float x : in.k) ASSERT_EQ(round_to_dtype(x, spec.dtype), x) << text;

    JitAttention(spec, kAvx2, {{"schedule", "naive"}}).run(in.args);
    in.read_output();
    std::copy(in.out.begin(), in.out.end(), in.expected.begin());
    in.poison_output();
    in.read_output();
    EXPECT_TRUE(std::isnan(in.out(0, 0, 0, 0))) << text;
    EXPECT_FALSE(check_output(in.out, in.expected, spec.dtype).ok) << text;

    JitAttention(spec, kAvx2, {{"schedule", "online_avx2"}}).run(in.args);
    in.read_output();
    const autotune::CheckResult check = check_output(in.out, in.expected, spec.dtype);
    EXPECT_TRUE(check.ok) << text << ": " << check.detail;
  }
}

}  // namespace
}  // namespace attnforge::bench
