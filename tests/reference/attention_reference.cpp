#include "attention_reference.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "spec/key_range.h"

namespace attnforge::reference {

namespace {

// Position of query i on the key axis under the spec's alignment.
long aligned_position(const Problem& p, int i, int valid_keys) {
  return attnforge::aligned_position<long>(p.spec, i, valid_keys, p.q_len);
}

bool sees(const Problem& p, int b, int i, int j) {
  int valid_keys = p.spec.key_padding ? p.key_lengths[b] : p.kv_len;
  if (j >= valid_keys) return false;
  long pos = aligned_position(p, i, valid_keys);
  switch (p.spec.mask) {
    case PositionMask::none:
      return true;
    case PositionMask::causal:
      return j <= pos;
    case PositionMask::window: {
      const bool given = p.spec.run_time_window;
      return j >= pos - (given ? p.window_left : p.spec.window_left) &&
             j <= pos + (given ? p.window_right : p.spec.window_right);
    }
  }
  return false;
}

double additive_term(const Problem& p, int b, int h, int i, int j) {
  if (p.spec.bias == BiasKind::tensor) {
    int bb = p.bias_batch == 1 ? 0 : b;
    int bh = p.bias_heads == 1 ? 0 : h;
    size_t index = ((static_cast<size_t>(bb) * p.bias_heads + bh) * p.q_len + i) * p.kv_len + j;
    return p.bias[index];
  }
  if (p.spec.bias == BiasKind::alibi) {
    int valid_keys = p.spec.key_padding ? p.key_lengths[b] : p.kv_len;
    return -p.alibi_slopes[h] *
           std::fabs(static_cast<double>(j - aligned_position(p, i, valid_keys)));
  }
  return 0.0;
}

}  // namespace

Result attention(const Problem& p) {
  const AttentionSpec& s = p.spec;
  const int D = s.head_dim, H = s.heads, G = s.heads / s.kv_heads;
  Result result;
  result.out.assign(static_cast<size_t>(p.batch) * H * p.q_len * D, 0.0);
  result.weights.assign(static_cast<size_t>(p.batch) * H * p.q_len * p.kv_len, 0.0);
  result.lse.assign(static_cast<size_t>(p.batch) * H * p.q_len,
                    std::numeric_limits<double>::infinity());
  std::vector<double> logits(p.kv_len);
  std::vector<bool> counts(p.kv_len);

  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < H; ++h) {
      const int hk = h / G;
      for (int i = 0; i < p.q_len; ++i) {
        const double* q = &p.q[((static_cast<size_t>(b) * H + h) * p.q_len + i) * D];
        double row_max = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < p.kv_len; ++j) {
          const double* k = &p.k[((static_cast<size_t>(b) * s.kv_heads + hk) * p.kv_len + j) * D];
          double dot = 0.0;
          for (int d = 0; d < D; ++d) dot += q[d] * k[d];
          double scaled = dot * p.scale;
          if (s.softcapped()) scaled = std::tanh(scaled / s.softcap) * s.softcap;
          if (p.score_mod) scaled = p.score_mod(scaled, b, h, i, j);
          logits[j] = scaled + additive_term(p, b, h, i, j);
          counts[j] = sees(p, b, i, j) && (!p.mask_mod || p.mask_mod(b, h, i, j)) &&
                      logits[j] > kMaskedLogitLimit;
          if (counts[j]) row_max = std::max(row_max, logits[j]);
        }
        double sum = 0.0;
        for (int j = 0; j < p.kv_len; ++j) {
          logits[j] = counts[j] ? std::exp(logits[j] - row_max) : 0.0;
          sum += logits[j];
        }
        if (sum == 0.0) continue;  // no key counts: the row stays zero
        result.lse[(static_cast<size_t>(b) * H + h) * p.q_len + i] = row_max + std::log(sum);
        double* out = &result.out[((static_cast<size_t>(b) * H + h) * p.q_len + i) * D];
        double* weights =
            &result.weights[((static_cast<size_t>(b) * H + h) * p.q_len + i) * p.kv_len];
        for (int j = 0; j < p.kv_len; ++j) {
          double w = logits[j] / sum;
          weights[j] = w;
          if (w == 0.0) continue;
          const double* v = &p.v[((static_cast<size_t>(b) * s.kv_heads + hk) * p.kv_len + j) * D];
          for (int d = 0; d < D; ++d) out[d] += w * v[d];
        }
      }
    }
  }
  return result;
}

}  // namespace attnforge::reference
