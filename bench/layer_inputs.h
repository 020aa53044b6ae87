// The tensors of one layer benchmark case (self-attention): a random input,
// weights and biases, the output every implementation writes, and the naive
// kernel's output it is checked against.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

#include "spec/layer_arguments.h"
#include "spec/layer_spec.h"

namespace attnforge::bench {

struct LayerShape {
  int batch = 1;
  int len = 1;  // Lq = Lk
};

struct LayerInputs {
  using Tensor = Halide::Runtime::Buffer<float>;

  // x uniform in [-1, 1]; weights uniform in +-1/sqrt(fan-in); biases in [-0.5, 0.5].
  LayerInputs(const LayerSpec& spec, LayerShape shape, uint32_t seed);
  LayerInputs(const LayerInputs&) = delete;  // args points into the tensors
  LayerInputs& operator=(const LayerInputs&) = delete;

  Tensor x;      // (d_model, L, B): [B][L][d_model]
  Tensor w_qkv;  // (N, d_model): [d_model][N], N = (H + 2 H_kv) D
  Tensor b_qkv;  // (N)
  Tensor w_o;    // (d_model, H D): [H D][d_model]
  Tensor b_o;    // (d_model)
  Tensor out, expected;
  LayerArguments args;
};

}  // namespace attnforge::bench
