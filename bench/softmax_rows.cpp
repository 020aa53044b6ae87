#include "softmax_rows.h"

#include <algorithm>
#include <cmath>

#include "spec/key_range.h"

namespace attnforge::bench {
namespace {

__attribute__((always_inline)) inline void softmax_row(float* row, long length, KeyRange<long> keys,
                                                       float softcap) {
  if (key_count(keys) == 0) {
    std::fill(row, row + length, 0.0f);
    return;
  }
  if (softcap > 0.0f) {
    for (long j = keys.begin; j < keys.end; ++j) row[j] = std::tanh(row[j] / softcap) * softcap;
  }
  float row_max = row[keys.begin];
  for (long j = keys.begin; j < keys.end; ++j) row_max = std::max(row_max, row[j]);
  float sum = 0.0f;
  for (long j = keys.begin; j < keys.end; ++j) {
    row[j] = std::exp(row[j] - row_max);
    sum += row[j];
  }
  const float inverse = 1.0f / sum;
  for (long j = keys.begin; j < keys.end; ++j) row[j] *= inverse;
  std::fill(row, row + keys.begin, 0.0f);
  std::fill(row + keys.end, row + length, 0.0f);
}

__attribute__((always_inline)) inline void softmax_body(const AttentionSpec& spec, float* scores,
                                                        long q_len, long kv_len, long row_begin,
                                                        long row_end) {
  for (long i = row_begin; i < row_end; ++i) {
    softmax_row(scores + i * kv_len, kv_len, query_keys(spec, i, q_len, kv_len), spec.softcap);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void softmax_avx2(const AttentionSpec& spec, float* scores,
                                                      long q_len, long kv_len, long row_begin,
                                                      long row_end) {
  softmax_body(spec, scores, q_len, kv_len, row_begin, row_end);
}
#endif

void softmax_default(const AttentionSpec& spec, float* scores, long q_len, long kv_len,
                     long row_begin, long row_end) {
  softmax_body(spec, scores, q_len, kv_len, row_begin, row_end);
}

}  // namespace

void softmax_rows(const AttentionSpec& spec, float* scores, long q_len, long kv_len, long row_begin,
                  long row_end) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return softmax_avx2(spec, scores, q_len, kv_len, row_begin, row_end);
#endif
  softmax_default(spec, scores, q_len, kv_len, row_begin, row_end);
}

}  // namespace attnforge::bench
