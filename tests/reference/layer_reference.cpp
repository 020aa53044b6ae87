#include "layer_reference.h"

namespace attnforge::reference {

namespace {

// [B][heads][L][D] from x [B][L][d_model] times w [d_model][heads * D] plus bias.
std::vector<double> project(const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& bias, int batch, int len, int d_model,
                            int heads, int head_dim) {
  const int features = heads * head_dim;
  std::vector<double> out(static_cast<size_t>(batch) * heads * len * head_dim);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < len; ++i)
        for (int d = 0; d < head_dim; ++d) {
          const int n = h * head_dim + d;
          double sum = bias.empty() ? 0.0 : bias[n];
          for (int c = 0; c < d_model; ++c) {
            sum += x[(static_cast<size_t>(b) * len + i) * d_model + c] *
                   w[static_cast<size_t>(c) * features + n];
          }
          out[((static_cast<size_t>(b) * heads + h) * len + i) * head_dim + d] = sum;
        }
  return out;
}

}  // namespace

LayerResult layer(const LayerProblem& p) {
  const LayerSpec& spec = p.spec;
  const int B = p.attention.batch, Lq = p.attention.q_len, Lk = p.attention.kv_len;
  const int H = spec.attention.heads, Hkv = spec.attention.kv_heads, D = spec.head_dim();
  const int dm = spec.d_model;
  const std::vector<double>& x_kv = spec.self_attention ? p.x_q : p.x_kv;

  Problem attention = p.attention;
  attention.spec = spec.attention;
  attention.q = project(p.x_q, p.w_q, p.b_q, B, Lq, dm, H, D);
  attention.k = project(x_kv, p.w_k, p.b_k, B, Lk, dm, Hkv, D);
  attention.v = project(x_kv, p.w_v, p.b_v, B, Lk, dm, Hkv, D);
  Result heads = reference::attention(attention);

  LayerResult result;
  result.out.assign(static_cast<size_t>(B) * Lq * dm, 0.0);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < Lq; ++i)
      for (int m = 0; m < dm; ++m) {
        double sum = p.b_o.empty() ? 0.0 : p.b_o[m];
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d) {
            sum += heads.out[((static_cast<size_t>(b) * H + h) * Lq + i) * D + d] *
                   p.w_o[static_cast<size_t>(h * D + d) * dm + m];
          }
        result.out[(static_cast<size_t>(b) * Lq + i) * dm + m] = sum;
      }
  if (spec.weights == LayerWeights::per_head) result.weights = heads.weights;
  if (spec.weights == LayerWeights::averaged) {
    result.weights.assign(static_cast<size_t>(B) * Lq * Lk, 0.0);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < Lq; ++i)
          for (int j = 0; j < Lk; ++j) {
            result.weights[(static_cast<size_t>(b) * Lq + i) * Lk + j] +=
                heads.weights[((static_cast<size_t>(b) * H + h) * Lq + i) * Lk + j] / H;
          }
  }
  return result;
}

}  // namespace attnforge::reference
