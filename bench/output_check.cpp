#include "bench/output_check.h"

namespace attnforge::bench {

autotune::CheckResult check_output(const Halide::Runtime::Buffer<float>& actual,
                                   const Halide::Runtime::Buffer<float>& expected, DType dtype) {
  return autotune::check_output(actual.data(), actual.number_of_elements(), expected.data(),
                                expected.number_of_elements(), dtype);
}

autotune::CheckResult check_output(const std::vector<float>& actual,
                                   const Halide::Runtime::Buffer<float>& expected, DType dtype) {
  return autotune::check_output(actual.data(), actual.size(), expected.data(),
                                expected.number_of_elements(), dtype);
}

}  // namespace attnforge::bench
