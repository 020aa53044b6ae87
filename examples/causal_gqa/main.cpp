// Causal grouped-query attention (8 query heads sharing 2 key/value heads,
// head dim 64) through the attnforge runtime, checked against a direct
// computation. Exits non-zero on an error or a wrong result.
#include <attnforge/attention.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int B = 2, H = 8, H_KV = 2, LQ = 37, LK = 37, D = 64;

// out[b][h][i] = softmax_j<=i(q.k / sqrt(D)) v, computed directly in double.
double expected(const std::vector<float>& q, const std::vector<float>& k,
                const std::vector<float>& v, int b, int h, int i, int d) {
  const int g = h / (H / H_KV);
  auto at = [](const std::vector<float>& t, int heads, int len, int b, int h, int j, int d) {
    return double(t[((size_t(b) * heads + h) * len + j) * D + d]);
  };
  std::vector<double> logits(i + 1);
  double max = -INFINITY, sum = 0.0, result = 0.0;
  for (int j = 0; j <= i; ++j) {
    double dot = 0.0;
    for (int e = 0; e < D; ++e) dot += at(q, H, LQ, b, h, i, e) * at(k, H_KV, LK, b, g, j, e);
    logits[j] = dot / std::sqrt(double(D));
    max = std::fmax(max, logits[j]);
  }
  for (int j = 0; j <= i; ++j) sum += std::exp(logits[j] - max);
  for (int j = 0; j <= i; ++j)
    result += std::exp(logits[j] - max) / sum * at(v, H_KV, LK, b, g, j, d);
  return result;
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> q(size_t(B) * H * LQ * D), k(size_t(B) * H_KV * LK * D), v(k.size());
  std::vector<float> out(q.size());
  for (auto* t : {&q, &k, &v}) {
    for (float& x : *t) x = uniform(rng);
  }

  using attnforge::ElementType;
  using attnforge::TensorView;
  TensorView tq = TensorView::contiguous(q.data(), ElementType::f32, {B, H, LQ, D});
  TensorView tk = TensorView::contiguous(k.data(), ElementType::f32, {B, H_KV, LK, D});
  TensorView tv = TensorView::contiguous(v.data(), ElementType::f32, {B, H_KV, LK, D});
  TensorView tout = TensorView::contiguous(out.data(), ElementType::f32, {B, H, LQ, D});
  attnforge::AttentionOptions options;
  options.mask = attnforge::MaskKind::causal;

  attnforge::KernelChoice choice;
  attnforge::Status status = attnforge::choose_kernel(tq, tk, tv, tout, options, &choice);
  if (status.ok()) status = attnforge::attention(tq, tk, tv, tout, options);
  if (!status.ok()) {
    std::fprintf(stderr, "attention failed (%s): %s\n", attnforge::to_string(status.code),
                 status.message.c_str());
    return 1;
  }
  double max_error = 0.0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < LQ; ++i)
        for (int d = 0; d < D; ++d) {
          double got = out[((size_t(b) * H + h) * LQ + i) * D + d];
          max_error = std::fmax(max_error, std::fabs(got - expected(q, k, v, b, h, i, d)));
        }
  std::printf("kernel %s (%s, %s)\nmax |error| %.2e\n", choice.function.c_str(),
              choice.spec.c_str(), choice.bucket.c_str(), max_error);
  return max_error < 1e-4 ? 0 : 1;
}
