// Attention computed the plain way, in double, for every spec variant. It is
// the independent reference every kernel is tested against: no Halide, no
// shared code with the generators beyond the AttentionSpec struct.
#pragma once

#include <functional>
#include <vector>

#include "spec/attention_spec.h"

namespace attnforge::reference {

struct Problem {
  AttentionSpec spec;
  int batch = 1;
  int q_len = 1;
  int kv_len = 1;
  double scale = 1.0;
  std::vector<double> q;             // [B][H][Lq][D]
  std::vector<double> k, v;          // [B][H_kv][Lk][D]
  std::vector<int> key_lengths;      // [B], key padding only
  std::vector<double> bias;          // [bias_batch][bias_heads][Lq][Lk], bias tensor only
  int bias_batch = 1;                // 1 (broadcast) or B
  int bias_heads = 1;                // 1 (broadcast) or H
  std::vector<double> alibi_slopes;  // [H], ALiBi only
  int window_left = 0;               // a window given per call (spec.run_time_window) only
  int window_right = 0;
  // A modifier (spec.modified()) written again in double by the test:
  // score_mod(scaled logit after the softcap, b, h, i, j) and mask_mod(b, h,
  // i, j). Empty: unchanged, all visible.
  std::function<double(double, int, int, int, int)> score_mod;
  std::function<bool(int, int, int, int)> mask_mod;
};

struct Result {
  std::vector<double> out;      // [B][H][Lq][D]
  std::vector<double> weights;  // [B][H][Lq][Lk]
  // [B][H][Lq]: log of the row's sum of exp(logit) over the keys it counts,
  // +inf for a row that counts none.
  std::vector<double> lse;
};

// Keys a query cannot see, and keys whose biased logit is at or below this,
// take no weight; a row left with no key outputs zeros.
constexpr double kMaskedLogitLimit = -1e30;

Result attention(const Problem& problem);

}  // namespace attnforge::reference
