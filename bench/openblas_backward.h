// The outside peer "OpenBLAS unfused backward": per (batch, KV head) and each
// of its query heads, the whole score matrix again (S = scale * Q K^T,
// sgemm), P by the masked row softmax, then dV += P^T dO, dP = dO V^T,
// dS = P * (dP - rowsum(dO * O)) * scale, dQ = dS K and dK += dS^T Q, five
// more sgemms. It is what a framework's plain math path does on a CPU, with
// P recomputed instead of kept from the forward.
#pragma once

#include <vector>

#include "spec/attention_spec.h"

namespace attnforge::bench {

class OpenBlasBackward {
 public:
  // Throws std::invalid_argument unless the spec is f32 with no key padding,
  // bias or modifier (masks: none, causal, window; MHA, GQA or MQA).
  explicit OpenBlasBackward(const AttentionSpec& spec);

  void set_num_threads(int threads);

  // q, out, d_out, dq: [B][H][Lq][D]; k, v, dk, dv: [B][H_kv][Lk][D]; all contiguous.
  struct Tensors {
    const float *q, *k, *v, *out, *d_out;
    float *dq, *dk, *dv;
  };
  void run(const Tensors& t, int batch, int q_len, int kv_len, float scale);

 private:
  // One (batch, KV head): its query heads' products, with a worker's two
  // Lq x Lk matrices.
  void kv_head(const Tensors& t, long b, int kv_head, int q_len, int kv_len, float scale,
               float* probs, float* d_scores);

  AttentionSpec spec_;
  int threads_ = 1;
  std::vector<float> matrices_;  // two Lq x Lk matrices per worker
};

}  // namespace attnforge::bench
