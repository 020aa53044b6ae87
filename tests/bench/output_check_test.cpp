// Every benchmark checks an output as the tuner does (autotune/checker.h):
// one rule per storage dtype, relative to the expected value.
#include "bench/output_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace attnforge::bench {
namespace {

using Tensor = Halide::Runtime::Buffer<float>;

Tensor tensor_of(const std::vector<float>& values) {
  Tensor t(static_cast<int>(values.size()));
  std::copy(values.begin(), values.end(), t.begin());
  return t;
}

std::vector<float> values_of(const Tensor& t) {
  return {t.begin(), t.end()};
}

// The verdict of the benchmarks' check on a tensor and on a peer's values,
// after asserting both are the tuner's.
bool accepted(const std::vector<float>& actual, const std::vector<float>& expected, DType dtype) {
  const bool tuner = autotune::check_output(actual, expected, dtype).ok;
  EXPECT_EQ(check_output(tensor_of(actual), tensor_of(expected), dtype).ok, tuner);
  EXPECT_EQ(check_output(actual, tensor_of(expected), dtype).ok, tuner);
  return tuner;
}

TEST(BenchOutputCheck, IsTheTunersCheckForEachDtype) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f), error(-3e-2f, 3e-2f);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    int passed = 0, failed = 0;
    for (int n = 0; n < 200; ++n) {
      const float expected = value(rng);
      const float scale = std::pow(10.0f, -static_cast<float>(n % 4));  // 3e-2 down to 3e-5
      (accepted({expected + scale * error(rng)}, {expected}, dtype) ? passed : failed)++;
    }
    EXPECT_GT(passed, 0);
    EXPECT_GT(failed, 0);
  }
}

// Where the benchmarks' former fixed |diff| <= 1e-3 and the tuner's rule differ,
// the tuner's decides.
TEST(BenchOutputCheck, HoldsBenchmarksToTheTunersTolerance) {
  EXPECT_FALSE(accepted({0.5005f}, {0.5f}, DType::f32));  // within 1e-3, beyond f32's rule
  EXPECT_TRUE(accepted({1.0015f}, {1.0f}, DType::f16));   // beyond 1e-3, a few f16 ulps
  EXPECT_TRUE(accepted({1.02f}, {1.0f}, DType::bf16));    // a few bf16 ulps
}

TEST(BenchOutputCheck, NanAndMissingOutputsFail) {
  EXPECT_FALSE(accepted({NAN, 1.0f}, {1.0f, 1.0f}, DType::f32));
  EXPECT_FALSE(accepted({1.0f}, {1.0f, 1.0f}, DType::bf16));
  EXPECT_FALSE(accepted({}, {1.0f}, DType::f16));  // a peer whose output never came back
  Tensor same = tensor_of({0.25f, -1.5f});
  EXPECT_TRUE(check_output(same, same, DType::f32).ok);
  EXPECT_TRUE(check_output(values_of(same), same, DType::f32).ok);
}

}  // namespace
}  // namespace attnforge::bench
