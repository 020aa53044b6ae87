// The outside peer "OpenBLAS layer": what a framework's plain CPU path does for
// a self-attention layer. One sgemm for the packed QKV projection, copies into
// per-head [B][H][L][D] tensors, OpenBLAS unfused attention, a copy back to
// [B][L][H D] and one sgemm for the output projection; biases are the GEMMs'
// initial values.
#pragma once

#include <vector>

#include "bench/layer_inputs.h"
#include "bench/openblas_attention.h"
#include "spec/layer_spec.h"

namespace attnforge::bench {

class OpenBlasLayer {
 public:
  // Throws std::invalid_argument for a spec the OpenBLAS attention does not support.
  explicit OpenBlasLayer(const LayerSpec& spec);

  void set_num_threads(int threads);

  // Reads x, the weights and biases of `inputs`; writes `out`.
  void run(const LayerInputs& inputs, float* out, int batch, int len);

 private:
  // C [rows][cols] = bias broadcast over rows, then C += A [rows][inner] B [inner][cols].
  void gemm_with_bias(const float* a, const float* b, const float* bias, float* c, int rows,
                      int inner, int cols);

  LayerSpec spec_;
  OpenBlasAttention attention_;
  int threads_ = 1;
  std::vector<float> qkv_, q_, k_, v_, heads_, merged_;
};

}  // namespace attnforge::bench
