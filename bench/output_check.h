// The benchmarks' output check is the tuner's (autotune/checker.h): a kernel
// the tuner accepts is one every benchmark times, and the peers are held to
// the same rule.
#pragma once

#include <HalideBuffer.h>

#include <vector>

#include "autotune/checker.h"
#include "spec/attention_spec.h"

namespace attnforge::bench {

// An implementation's output against the naive kernel's, `dtype` being the
// spec's storage dtype.
autotune::CheckResult check_output(const Halide::Runtime::Buffer<float>& actual,
                                   const Halide::Runtime::Buffer<float>& expected, DType dtype);
// A peer's output (e.g. TorchResult::output), laid out as `expected`.
autotune::CheckResult check_output(const std::vector<float>& actual,
                                   const Halide::Runtime::Buffer<float>& expected, DType dtype);

}  // namespace attnforge::bench
