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
      spec.return_weights) {
    throw std::invalid_argument(
        "OpenBLAS attention supports f32 specs without key padding, bias "
        "or returned weights, not " +
        spec.to_string());
  }
}

void OpenBlasAttention::set_num_threads(int threads) {
  threads_ = threads < 1 ? 1 : threads;
  openblas_set_num_threads(threads_);
}

void OpenBlasAttention::run(const float* q, const float* k, const float* v, float* out, int batch,
                            int q_len, int kv_len, float scale) {
  const long D = spec_.head_dim, Lq = q_len, Lk = kv_len;
  const int H = spec_.heads, group = spec_.group_size();
  scores_.resize(static_cast<size_t>(Lq * Lk));
  float* s = scores_.data();

  const long useful_threads = std::max(1L, Lq * Lk / kMinScoresPerThread);
  const int softmax_threads = static_cast<int>(std::min<long>(threads_, useful_threads));
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < H; ++h) {
      const long kv_head = static_cast<long>(b) * spec_.kv_heads + h / group;
      const float* qh = q + (static_cast<long>(b) * H + h) * Lq * D;
      const float* kh = k + kv_head * Lk * D;
      const float* vh = v + kv_head * Lk * D;
      float* oh = out + (static_cast<long>(b) * H + h) * Lq * D;

      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q_len, kv_len, D, scale, qh, D, kh, D,
                  0.0f, s, kv_len);
      std::vector<std::thread> helpers;
      for (int t = 1; t < softmax_threads; ++t) {
        helpers.emplace_back([&, t] {
          softmax_rows(spec_, s, Lq, Lk, Lq * t / softmax_threads, Lq * (t + 1) / softmax_threads);
        });
      }
      softmax_rows(spec_, s, Lq, Lk, 0, Lq / softmax_threads);
      for (auto& helper : helpers) helper.join();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, q_len, D, kv_len, 1.0f, s, kv_len, vh,
                  D, 0.0f, oh, D);
    }
  }
}

}  // namespace attnforge::bench
