#include "openblas_attention.h"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "softmax_rows.h"

namespace attnforge::bench {
namespace {

// Below this many scores a second softmax thread costs more than it saves.
constexpr long kMinScoresPerThread = 1L << 16;

}  // namespace

OpenBlasAttention::OpenBlasAttention(const AttentionSpec& spec) : spec_(spec) {
  spec.validate();
  if (spec.dtype != DType::f32 || spec.key_padding || spec.bias != BiasKind::none ||
      spec.return_weights || spec.modified()) {
    throw std::invalid_argument(
        "OpenBLAS attention supports f32 specs without key padding, bias, a modifier "
        "or returned weights, not " +
        spec.to_string());
  }
}

void OpenBlasAttention::set_num_threads(int threads) {
  threads_ = threads < 1 ? 1 : threads;
}

void OpenBlasAttention::head(const Problem& p, long b, int h, float* scores, int softmax_threads) {
  const long D = spec_.head_dim, Lq = p.q_len, Lk = p.kv_len;
  const int H = spec_.heads;
  const long kv_head = b * spec_.kv_heads + h / spec_.group_size();
  const float* qh = p.q + (b * H + h) * Lq * D;
  const float* kh = p.k + kv_head * Lk * D;
  const float* vh = p.v + kv_head * Lk * D;
  float* oh = p.out + (b * H + h) * Lq * D;

  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p.q_len, p.kv_len, D, p.scale, qh, D, kh, D,
              0.0f, scores, p.kv_len);
  std::vector<std::thread> helpers;
  for (int t = 1; t < softmax_threads; ++t) {
    helpers.emplace_back([&, t] {
      softmax_rows(spec_, scores, Lq, Lk, Lq * t / softmax_threads, Lq * (t + 1) / softmax_threads);
    });
  }
  softmax_rows(spec_, scores, Lq, Lk, 0, Lq / softmax_threads);
  for (auto& helper : helpers) helper.join();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p.q_len, D, p.kv_len, 1.0f, scores,
              p.kv_len, vh, D, 0.0f, oh, D);
}

void OpenBlasAttention::run(const float* q, const float* k, const float* v, float* out, int batch,
                            int q_len, int kv_len, float scale) {
  const Problem p{q, k, v, out, q_len, kv_len, scale};
  const long heads = static_cast<long>(batch) * spec_.heads;
  const size_t matrix = static_cast<size_t>(q_len) * kv_len;
  if (heads >= threads_) {
    // Enough (batch, head) pairs for every thread: each thread takes whole
    // heads with its own scores matrix and single-threaded sgemm.
    openblas_set_num_threads(1);
    scores_.resize(matrix * threads_);
    std::vector<std::thread> workers;
    auto work = [&](int t) {
      for (long n = t; n < heads; n += threads_) {
        head(p, n / spec_.heads, static_cast<int>(n % spec_.heads), &scores_[matrix * t], 1);
      }
    };
    for (int t = 1; t < threads_; ++t) workers.emplace_back(work, t);
    work(0);
    for (auto& worker : workers) worker.join();
    return;
  }
  // Few heads: threads inside each sgemm and across the softmax's rows.
  openblas_set_num_threads(threads_);
  scores_.resize(matrix);
  const long useful_threads = std::max(1L, static_cast<long>(matrix) / kMinScoresPerThread);
  const int softmax_threads = static_cast<int>(std::min<long>(threads_, useful_threads));
  for (long n = 0; n < heads; ++n) {
    head(p, n / spec_.heads, static_cast<int>(n % spec_.heads), scores_.data(), softmax_threads);
  }
}

}  // namespace attnforge::bench
