#include "checker.h"

#include <fmt/format.h>

#include <cmath>

namespace attnforge::autotune {

namespace {

double tolerance_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 1e-4;
    case DType::f16:
      return 2e-3;  // a few f16 ulps
    case DType::bf16:
      return 1.6e-2;  // a few bf16 ulps
  }
  return 0.0;
}

}  // namespace

CheckResult check_output(const std::vector<float>& actual, const std::vector<float>& expected,
                         DType dtype) {
  return check_output(actual.data(), actual.size(), expected.data(), expected.size(), dtype);
}

CheckResult check_output(const float* actual, size_t actual_count, const float* expected,
                         size_t expected_count, DType dtype) {
  if (actual_count != expected_count) {
    return {false, fmt::format("{} outputs, expected {}", actual_count, expected_count)};
  }
  const double tol = tolerance_of(dtype);
  for (size_t n = 0; n < actual_count; ++n) {
    double error = std::fabs(static_cast<double>(actual[n]) - expected[n]);
    if (!(error <= tol * (1.0 + std::fabs(expected[n])))) {
      return {false, fmt::format("output[{}] = {}, expected {}", n, actual[n], expected[n])};
    }
  }
  return {};
}

}  // namespace attnforge::autotune
