#include "checker.h"

#include <fmt/format.h>

#include <cmath>

#include "spec/dtype_traits.h"

namespace attnforge::autotune {

CheckResult check_output(const std::vector<float>& actual, const std::vector<float>& expected,
                         DType dtype) {
  return check_output(actual.data(), actual.size(), expected.data(), expected.size(), dtype);
}

CheckResult check_output(const float* actual, size_t actual_count, const float* expected,
                         size_t expected_count, DType dtype) {
  if (actual_count != expected_count) {
    return {false, fmt::format("{} outputs, expected {}", actual_count, expected_count)};
  }
  const double tol = traits_of(dtype).check_tolerance;
  for (size_t n = 0; n < actual_count; ++n) {
    double error = std::fabs(static_cast<double>(actual[n]) - expected[n]);
    if (!(error <= tol * (1.0 + std::fabs(expected[n])))) {
      return {false, fmt::format("output[{}] = {}, expected {}", n, actual[n], expected[n])};
    }
  }
  return {};
}

}  // namespace attnforge::autotune
