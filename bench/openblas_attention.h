// The outside peer "OpenBLAS unfused attention": per (batch, head) the whole
// score matrix S = scale * Q K^T (sgemm), the causal mask and row softmax on S,
// then O = P V (sgemm). It is what a framework's plain math path does on a CPU.
#pragma once

#include <vector>

#include "generators/attention_spec.h"

namespace attnforge::bench {

class OpenBlasAttention {
 public:
  // Throws std::invalid_argument unless the spec is f32 with no key padding,
  // bias or returned weights (masks: none, causal, window; MHA or GQA).
  explicit OpenBlasAttention(const AttentionSpec& spec);

  // OpenBLAS's thread count (process-wide) and the softmax's.
  void set_num_threads(int threads);

  // q, out: [B][H][Lq][D]; k, v: [B][H_kv][Lk][D]; all contiguous.
  void run(const float* q, const float* k, const float* v, float* out, int batch, int q_len,
           int kv_len, float scale);

 private:
  AttentionSpec spec_;
  int threads_ = 1;
  std::vector<float> scores_;  // one Lq x Lk matrix, reused for every (batch, head)
};

}  // namespace attnforge::bench
