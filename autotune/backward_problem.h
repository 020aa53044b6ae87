// The tensors one backward measurement runs on: TuningInputs' q, k, v and
// mask tensors, a random output gradient, the forward's out and row
// log-sum-exp, and the gradients dq, dk and dv, read back as f32 for the
// checker. The same seed gives the same problem in every process; the
// forward's out and lse, computed once, travel between processes as files.
#pragma once

#include <HalideBuffer.h>

#include <filesystem>
#include <vector>

#include "spec/backward_arguments.h"
#include "tuning_inputs.h"

namespace attnforge::autotune {

class BackwardProblem {
 public:
  // spec without .lse: the backward's.
  BackwardProblem(const AttentionSpec& spec, TuningShape shape, uint32_t seed);
  BackwardProblem(const BackwardProblem&) = delete;  // arguments() point into the buffers
  BackwardProblem& operator=(const BackwardProblem&) = delete;

  BackwardArguments& arguments() { return args_; }
  // The forward's arguments (the spec with .lse), writing out and lse.
  KernelArguments& forward_arguments() { return inputs_.arguments(); }

  void save_forward(const std::filesystem::path& dir) const;
  void load_forward(const std::filesystem::path& dir);

  // One of the problem's tensors (dense, the spec's dtype) as f32, e.g. for a peer.
  std::vector<float> as_f32(const halide_buffer_t* tensor) const { return inputs_.as_f32(tensor); }

  // dq, dk, dv (and with .dbias d_bias) as f32, one after another;
  // NaN-filled by clear_gradients().
  std::vector<float> gradients() const;
  void clear_gradients();

 private:
  using Tensor = Halide::Runtime::Buffer<void>;

  AttentionSpec spec_;
  TuningInputs inputs_;
  Tensor d_out_, dq_, dk_, dv_, d_bias_;  // d_bias_: .dbias only
  Halide::Runtime::Buffer<float> lse_;
  BackwardArguments args_;
};

}  // namespace attnforge::autotune
