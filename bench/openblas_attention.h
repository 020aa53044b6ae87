// The outside peer "OpenBLAS unfused attention": per (batch, head) the whole
// score matrix S = scale * Q K^T (sgemm), the causal mask and row softmax on S,
// then O = P V (sgemm). It is what a framework's plain math path does on a CPU.
#pragma once

#include <vector>

#include "spec/attention_spec.h"

namespace attnforge::bench {

class OpenBlasAttention {
 public:
  // Throws std::invalid_argument unless the spec is f32 with no key padding,
  // bias or returned weights (masks: none, causal, window; MHA or GQA).
  explicit OpenBlasAttention(const AttentionSpec& spec);

  // Threads for one call: across (batch, head) pairs when there are enough,
  // otherwise inside OpenBLAS (process-wide) and across softmax rows.
  void set_num_threads(int threads);

  // q, out: [B][H][Lq][D]; k, v: [B][H_kv][Lk][D]; all contiguous.
  void run(const float* q, const float* k, const float* v, float* out, int batch, int q_len,
           int kv_len, float scale);

 private:
  struct Problem {
    const float *q, *k, *v;
    float* out;
    int q_len, kv_len;
    float scale;
  };
  // One (batch, head): sgemm, mask and softmax on `scores`, sgemm.
  void head(const Problem& p, long b, int h, float* scores, int softmax_threads);

  AttentionSpec spec_;
  int threads_ = 1;
  std::vector<float> scores_;  // an Lq x Lk matrix per worker, reused for every (batch, head)
};

}  // namespace attnforge::bench
