#include "attention_backward_reference.h"

#include <cmath>
#include <stdexcept>

namespace attnforge::reference {

Gradients attention_backward(const Problem& p, const std::vector<double>& d_out) {
  if (p.score_mod || p.mask_mod) {
    throw std::invalid_argument("the backward reference takes no modifier");
  }
  const AttentionSpec& s = p.spec;
  const int D = s.head_dim, H = s.heads, G = s.heads / s.kv_heads;
  const Result forward = attention(p);
  Gradients g;
  g.dq.assign(p.q.size(), 0.0);
  g.dk.assign(p.k.size(), 0.0);
  g.dv.assign(p.v.size(), 0.0);
  g.d_bias.assign(static_cast<size_t>(p.batch) * H * p.q_len * p.kv_len, 0.0);
  std::vector<double> d_probs(p.kv_len);
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < H; ++h) {
      const size_t kv_base = (static_cast<size_t>(b) * s.kv_heads + h / G) * p.kv_len * D;
      for (int i = 0; i < p.q_len; ++i) {
        const size_t row = (static_cast<size_t>(b) * H + h) * p.q_len + i;
        const double* q = &p.q[row * D];
        const double* dout = &d_out[row * D];
        const double* probs = &forward.weights[row * p.kv_len];
        double weighted = 0.0;  // sum_j P_ij dP_ij
        for (int j = 0; j < p.kv_len; ++j) {
          double dot = 0.0;
          for (int d = 0; d < D; ++d) dot += dout[d] * p.v[kv_base + j * D + d];
          d_probs[j] = dot;
          weighted += probs[j] * dot;
        }
        for (int j = 0; j < p.kv_len; ++j) {
          if (probs[j] == 0.0) continue;
          const double* k = &p.k[kv_base + j * D];
          double slope = 1.0;
          if (s.softcapped()) {
            double dot = 0.0;
            for (int d = 0; d < D; ++d) dot += q[d] * k[d];
            const double t = std::tanh(dot * p.scale / s.softcap);
            slope = 1.0 - t * t;
          }
          const double d_logit = probs[j] * (d_probs[j] - weighted);
          g.d_bias[row * p.kv_len + j] = d_logit;
          const double d_score = d_logit * slope * p.scale;
          for (int d = 0; d < D; ++d) {
            g.dq[row * D + d] += d_score * k[d];
            g.dk[kv_base + j * D + d] += d_score * q[d];
            g.dv[kv_base + j * D + d] += probs[j] * dout[d];
          }
        }
      }
    }
  }
  return g;
}

}  // namespace attnforge::reference
