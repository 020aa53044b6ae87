#include "openblas_backward.h"

#include <cblas.h>

#include <stdexcept>
#include <thread>

#include "softmax_rows.h"

namespace attnforge::bench {

OpenBlasBackward::OpenBlasBackward(const AttentionSpec& spec) : spec_(spec) {
  spec.validate();
  if (spec.dtype != DType::f32 || spec.key_padding || spec.bias != BiasKind::none ||
      spec.return_weights || spec.modified() || spec.softcapped()) {
    throw std::invalid_argument(
        "the OpenBLAS backward supports f32 specs without key padding, bias, softcap or a "
        "modifier, not " +
        spec.to_string());
  }
}

void OpenBlasBackward::set_num_threads(int threads) {
  threads_ = threads < 1 ? 1 : threads;
}

void OpenBlasBackward::kv_head(const Tensors& t, long b, int kv_head, int q_len, int kv_len,
                               float scale, float* probs, float* d_scores) {
  const long D = spec_.head_dim, Lq = q_len, Lk = kv_len;
  const long kv = b * spec_.kv_heads + kv_head;
  const float* k = t.k + kv * Lk * D;
  const float* v = t.v + kv * Lk * D;
  float* dk = t.dk + kv * Lk * D;
  float* dv = t.dv + kv * Lk * D;
  const int group = spec_.group_size();
  for (int g = 0; g < group; ++g) {
    const long row = (b * spec_.heads + long(kv_head) * group + g) * Lq * D;
    const float *q = t.q + row, *out = t.out + row, *d_out = t.d_out + row;
    float* dq = t.dq + row;
    const float first = g == 0 ? 0.0f : 1.0f;  // the group's first head writes dK and dV
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q_len, kv_len, D, scale, q, D, k, D, 0.0f,
                probs, kv_len);
    softmax_rows(spec_, probs, Lq, Lk, 0, Lq);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kv_len, D, q_len, 1.0f, probs, kv_len,
                d_out, D, first, dv, D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q_len, kv_len, D, 1.0f, d_out, D, v, D,
                0.0f, d_scores, kv_len);
    for (long i = 0; i < Lq; ++i) {
      float delta = 0.0f;
      for (long d = 0; d < D; ++d) delta += d_out[i * D + d] * out[i * D + d];
      const float* p = probs + i * Lk;
      float* ds = d_scores + i * Lk;
      for (long j = 0; j < Lk; ++j) ds[j] = p[j] * (ds[j] - delta) * scale;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, q_len, D, kv_len, 1.0f, d_scores, kv_len,
                k, D, 0.0f, dq, D);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kv_len, D, q_len, 1.0f, d_scores, kv_len,
                q, D, first, dk, D);
  }
}

void OpenBlasBackward::run(const Tensors& t, int batch, int q_len, int kv_len, float scale) {
  const long pairs = static_cast<long>(batch) * spec_.kv_heads;
  const size_t matrix = static_cast<size_t>(q_len) * kv_len;
  // Enough (batch, KV head) pairs for every thread: each takes whole pairs
  // (no two write one dK or dV) with single-threaded sgemm; else threads
  // inside each sgemm.
  const int workers = pairs >= threads_ ? threads_ : 1;
  openblas_set_num_threads(workers == 1 ? threads_ : 1);
  matrices_.resize(2 * matrix * workers);
  auto work = [&](int w) {
    float* probs = &matrices_[2 * matrix * w];
    for (long n = w; n < pairs; n += workers) {
      kv_head(t, n / spec_.kv_heads, static_cast<int>(n % spec_.kv_heads), q_len, kv_len, scale,
              probs, probs + matrix);
    }
  };
  std::vector<std::thread> helpers;
  for (int w = 1; w < workers; ++w) helpers.emplace_back(work, w);
  work(0);
  for (auto& helper : helpers) helper.join();
}

}  // namespace attnforge::bench
