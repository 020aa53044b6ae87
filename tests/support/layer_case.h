// One layer problem for tests: random activations, weights and biases for a
// layer spec and shape, the kernel arguments that point at them, and a
// comparison of the kernel's outputs with the double-precision reference.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>
#include <vector>

#include "attention_case.h"
#include "spec/layer_arguments.h"
#include "spec/layer_spec.h"
#include "tests/reference/layer_reference.h"

namespace attnforge::testing {

// f32 sums over d_model and over H D on top of the attention's own error.
constexpr Tolerance kLayerTolerance{2e-4, 2e-4};

class LayerCase {
 public:
  LayerCase(const LayerSpec& spec, CaseShape shape, uint32_t seed = 1);
  LayerCase(const LayerCase&) = delete;
  LayerCase& operator=(const LayerCase&) = delete;

  LayerArguments& arguments() { return args_; }
  const reference::LayerProblem& problem() const { return problem_; }

  // Compares out (and the weights when the spec returns them) with the reference.
  Comparison compare(Tolerance tolerance = kLayerTolerance) const;

  // The kernel's output, [B][Lq][d_model].
  std::vector<double> output() const;

 private:
  using Buffer = Halide::Runtime::Buffer<float>;

  LayerSpec spec_;
  AttentionCase extras_;  // key lengths, bias and ALiBi slopes
  reference::LayerProblem problem_;
  Buffer x_q_, x_kv_, w_qkv_, b_qkv_, w_q_, w_k_, w_v_, b_q_, b_k_, b_v_, w_o_, b_o_;
  Buffer out_, weights_;
  LayerArguments args_;
};

// The values of a buffer with its last dim outermost: row-major order of the
// reversed dims, as the reference indexes them.
std::vector<double> row_major_values(const Halide::Runtime::Buffer<float>& buffer);

}  // namespace attnforge::testing
