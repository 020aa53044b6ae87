// softcapped against cap * tanh(s / cap) in double, vectorized as the kernels
// run it, over caps from the smallest a spec takes to the largest (which
// take the form that divides by the cap).
#include "algorithm/softcap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace attnforge {
namespace {

// The worst |softcapped(s, cap) - cap tanh(s / cap)| / cap over s in
// [-12 cap, 12 cap], and the largest |softcapped(s, cap)| / cap seen.
struct Errors {
  double worst = 0, largest = 0;
};

Errors errors(float cap) {
  const int n = 480'001;
  Halide::Buffer<float> in(n);
  for (int i = 0; i < n; ++i) in(i) = static_cast<float>(cap * (-12.0 + 24.0 * i / (n - 1)));
  Halide::Var x;
  Halide::Func f;
  f(x) = softcapped(in(x), cap);
  f.vectorize(x, 16, Halide::TailStrategy::GuardWithIf);
  Halide::Buffer<float> out = f.realize({n});
  Errors e;
  for (int i = 0; i < n; ++i) {
    const double exact = cap * std::tanh(static_cast<double>(in(i)) / cap);
    e.worst = std::max(e.worst, std::abs(out(i) - exact) / cap);
    e.largest = std::max(e.largest, std::abs(static_cast<double>(out(i))) / cap);
  }
  return e;
}

TEST(Softcap, IsWithinAMillionthAndAFifthOfTheCap) {
  for (float cap : {1e-3f, 0.5f, 2.5f, 30.0f, 50.0f, 1e3f, 1e6f}) {
    const Errors e = errors(cap);
    EXPECT_LT(e.worst, 1.25e-6) << "cap " << cap;
    EXPECT_LT(e.largest, 1.0 + 1.25e-6) << "cap " << cap;
  }
}

TEST(Softcap, IsOddAndExactAtZero) {
  const float cap = 30.0f;
  Halide::Buffer<float> in(4);
  in(0) = 0.0f;
  in(1) = 7.5f;
  in(2) = -7.5f;
  in(3) = 1e30f;
  Halide::Var x;
  Halide::Func f;
  f(x) = softcapped(in(x), cap);
  Halide::Buffer<float> out = f.realize({4});
  EXPECT_EQ(out(0), 0.0f);
  EXPECT_EQ(out(1), -out(2));
  EXPECT_NEAR(out(3), cap, 1.25e-6 * cap);
}

}  // namespace
}  // namespace attnforge
