#include "openblas_layer.h"

#include <cblas.h>

#include <algorithm>

namespace attnforge::bench {

OpenBlasLayer::OpenBlasLayer(const LayerSpec& spec) : spec_(spec), attention_(spec.attention) {}

void OpenBlasLayer::set_num_threads(int threads) {
  threads_ = std::max(1, threads);
  attention_.set_num_threads(threads_);
}

void OpenBlasLayer::gemm_with_bias(const float* a, const float* b, const float* bias, float* c,
                                   int rows, int inner, int cols) {
  for (long r = 0; r < rows; ++r) std::copy(bias, bias + cols, c + r * cols);
  openblas_set_num_threads(threads_);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, inner, 1.0f, a, inner, b, cols,
              1.0f, c, cols);
}

void OpenBlasLayer::run(const LayerInputs& in, float* out, int batch, int len) {
  const int dm = spec_.d_model, D = spec_.head_dim();
  const int H = spec_.attention.heads, Hkv = spec_.attention.kv_heads;
  const int N = spec_.qkv_features();
  const long rows = static_cast<long>(batch) * len;
  qkv_.resize(rows * N);
  q_.resize(rows * H * D);
  k_.resize(rows * Hkv * D);
  v_.resize(rows * Hkv * D);
  heads_.resize(rows * H * D);
  merged_.resize(rows * H * D);
  gemm_with_bias(in.x.data(), in.w_qkv.data(), in.b_qkv.data(), qkv_.data(), rows, dm, N);
  // [B][L][(H + 2 Hkv) D] -> [B][heads][L][D] per tensor.
  auto split = [&](std::vector<float>& dst, int first_head, int heads) {
    for (long b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (long i = 0; i < len; ++i) {
          const float* src = qkv_.data() + (b * len + i) * N + (first_head + h) * D;
          std::copy(src, src + D, dst.data() + ((b * heads + h) * len + i) * D);
        }
  };
  split(q_, 0, H);
  split(k_, H, Hkv);
  split(v_, H + Hkv, Hkv);
  attention_.run(q_.data(), k_.data(), v_.data(), heads_.data(), batch, len, len, default_scale(D));
  for (long b = 0; b < batch; ++b)
    for (int h = 0; h < H; ++h)
      for (long i = 0; i < len; ++i) {
        const float* src = heads_.data() + ((b * H + h) * len + i) * D;
        std::copy(src, src + D, merged_.data() + (b * len + i) * H * D + h * D);
      }
  gemm_with_bias(merged_.data(), in.w_o.data(), in.b_o.data(), out, rows, H * D, dm);
}

}  // namespace attnforge::bench
