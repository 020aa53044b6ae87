// Every candidate's output is compared with the baseline's before it may win,
// and every benchmark's implementation before it is timed: one rule, so a
// kernel the tuner accepts is one every benchmark accepts.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace attnforge::autotune {

struct CheckResult {
  bool ok = true;
  std::string detail;  // the first mismatch, when not ok
};

// |actual - expected| <= tol * (1 + |expected|) everywhere, with tol set by the
// storage dtype (both sides are rounded to it); NaN never matches.
CheckResult check_output(const std::vector<float>& actual, const std::vector<float>& expected,
                         DType dtype);
// The same over raw values, e.g. a tensor's.
CheckResult check_output(const float* actual, size_t actual_count, const float* expected,
                         size_t expected_count, DType dtype);

}  // namespace attnforge::autotune
