// Every candidate's output is compared with the baseline's before it may win.
#pragma once

#include <string>
#include <vector>

#include "generators/attention_spec.h"

namespace attnforge::autotune {

struct CheckResult {
  bool ok = true;
  std::string detail;  // the first mismatch, when not ok
};

// |actual - expected| <= tol * (1 + |expected|) everywhere, with tol set by the
// storage dtype (both sides are rounded to it); NaN never matches.
CheckResult check_output(const std::vector<float>& actual, const std::vector<float>& expected,
                         DType dtype);

}  // namespace attnforge::autotune
