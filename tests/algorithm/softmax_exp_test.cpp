// softmax_exp against std::exp in double over the differences a softmax gives
// it: [-88, 0], masked logits, and the edges where its exponent add changes
// behaviour.
#include "algorithm/softmax_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "algorithm/attention_inputs.h"

namespace attnforge {
namespace {

// Evaluates softmax_exp(x, max) vectorized, as the kernels do, for each x.
std::vector<float> evaluate(const std::vector<float>& arguments, float max = 0.0f) {
  Halide::Buffer<float> in(static_cast<int>(arguments.size()));
  for (size_t n = 0; n < arguments.size(); ++n) in(static_cast<int>(n)) = arguments[n];
  Halide::Var x;
  Halide::Func f;
  f(x) = softmax_exp(in(x), max);
  f.vectorize(x, 16, Halide::TailStrategy::GuardWithIf);
  Halide::Buffer<float> out = f.realize({in.width()});
  return std::vector<float>(out.begin(), out.end());
}

// The argument x - max is rounded to f32 first; the rest is within 4e-7.
double worst_relative_error(float max) {
  std::vector<float> arguments;
  for (int n = 0; n <= 1'000'000; ++n) arguments.push_back(max - 87.0f * n / 1'000'000);
  for (float x : {-0.34657359f, -0.34657356f, -1e-7f, -1e-30f, -87.3f}) {
    arguments.push_back(max + x);
  }
  std::vector<float> result = evaluate(arguments, max);
  double worst = 0;
  for (size_t n = 0; n < arguments.size(); ++n) {
    double expected = std::exp(static_cast<double>(arguments[n] - max));
    worst = std::max(worst, std::abs(result[n] - expected) / expected);
  }
  return worst;
}

TEST(SoftmaxExp, IsWithinFourTenthsOfAMillionthOfExp) {
  EXPECT_LT(worst_relative_error(0.0f), 4e-7);
  EXPECT_LT(worst_relative_error(3.5f), 4e-7);
  EXPECT_LT(worst_relative_error(-20.25f), 4e-7);
}

// Logits around 1e4: the difference is taken before any scaling, so two
// logits one f32 step apart still give e^(-step), not a rounded step.
TEST(SoftmaxExp, KeepsSmallDifferencesOfLargeLogits) {
  const float max = 10000.0f;
  const float below = std::nextafter(max, 0.0f);
  std::vector<float> result = evaluate({below}, max);
  EXPECT_NEAR(result[0], std::exp(static_cast<double>(below) - max), 1e-7);
}

TEST(SoftmaxExp, IsExactlyOneAtTheMaxAndZeroFarBelow) {
  std::vector<float> result = evaluate({0.0f, -0.0f, -88.04f, -200.0f, kMaskedLogit, -1e38f});
  EXPECT_EQ(result[0], 1.0f);
  EXPECT_EQ(result[1], 1.0f);
  for (size_t n = 2; n < result.size(); ++n) EXPECT_EQ(result[n], 0.0f) << n;
}

// Between e^-87.3 (2^-126, the least normal f32) and e^-88 results are tiny
// and never negative.
TEST(SoftmaxExp, StaysTinyAndNonNegativeBelowTheNormalRange) {
  std::vector<float> arguments;
  for (int n = 0; n <= 1000; ++n) arguments.push_back(-87.0f - n / 1000.0f);
  std::vector<float> result = evaluate(arguments);
  for (size_t n = 0; n < result.size(); ++n) {
    EXPECT_GE(result[n], 0.0f) << arguments[n];
    EXPECT_LE(result[n], std::exp(-86.9)) << arguments[n];
  }
}

}  // namespace
}  // namespace attnforge
