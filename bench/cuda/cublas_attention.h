// The unfused CUDA baseline: cuBLAS strided-batched GEMM for the scores, a
// row softmax kernel (with the causal mask), and a cuBLAS GEMM for P.V, on
// dense (B, H, L, D) tensors in f32 or f16 (f32 accumulation). GQA and MQA
// share one GEMM per key/value head.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace attnforge::bench {

class CublasAttention {
 public:
  // Why this baseline cannot run `spec`; empty when it can.
  static std::string unsupported(const AttentionSpec& spec);

  // q, k, v: host tensors in the spec's storage dtype, copied to the device.
  CublasAttention(const AttentionSpec& spec, int batch, int q_len, int kv_len, float scale,
                  const void* q, const void* k, const void* v);
  ~CublasAttention();
  CublasAttention(const CublasAttention&) = delete;
  CublasAttention& operator=(const CublasAttention&) = delete;

  void run();                         // returns when the output is written
  std::vector<float> output() const;  // (B, H, Lq, D) as f32

 private:
  struct Device;
  std::unique_ptr<Device> device_;
};

}  // namespace attnforge::bench
