// The tensors one layer tuning measurement runs on: deterministic random
// activations, weights and biases for any layer spec at one shape (the
// attention's extras as TuningInputs makes them), and the output.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "spec/layer_arguments.h"
#include "spec/layer_spec.h"
#include "tuning_inputs.h"

namespace attnforge::autotune {

class LayerTuningInputs {
 public:
  // The same seed gives the same inputs in every process.
  LayerTuningInputs(const LayerSpec& spec, TuningShape shape, uint32_t seed);
  LayerTuningInputs(const LayerTuningInputs&) = delete;  // arguments() points into the buffers
  LayerTuningInputs& operator=(const LayerTuningInputs&) = delete;

  LayerArguments& arguments() { return args_; }

  std::vector<float> output() const;
  void clear_output();

 private:
  using Tensor = Halide::Runtime::Buffer<float>;
  // A random tensor owned here; the pointer stays valid while this lives.
  halide_buffer_t* make(std::vector<int> extents, float magnitude);

  TuningInputs extras_;  // key lengths, bias, ALiBi slopes
  uint32_t next_seed_;
  std::deque<Tensor> tensors_;  // every input; a deque never moves them
  Tensor out_, weights_;
  LayerArguments args_;
};

}  // namespace attnforge::autotune
