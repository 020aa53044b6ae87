// The attention half of a transformer encoder block, y = x + MHA(x), over a
// batch of padded sequences: attnforge::mha_layer computes the whole layer
// (Q/K/V projections, attention over 4 heads with the padding masked, output
// projection), then the residual is added. Checked against a direct
// computation; exits non-zero on an error or a wrong result.
#include <attnforge/mha_layer.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int B = 2, L = 37, DM = 64, H = 4, D = DM / H, N = 3 * DM;
const int kLengths[B] = {37, 23};  // sequence 1 is padded after 23 tokens

using Matrix = std::vector<float>;

// y[r][o] = b[o] + sum_c x[r][c] w[c][o], in double: rows x [rows][in], w [in][out].
std::vector<double> project(const std::vector<double>& x, const Matrix& w, const Matrix& b,
                            int rows, int in, int out) {
  std::vector<double> y(size_t(rows) * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double sum = b[o];
      for (int c = 0; c < in; ++c) sum += x[size_t(r) * in + c] * w[size_t(c) * out + o];
      y[size_t(r) * out + o] = sum;
    }
  return y;
}

// x + MHA(x) for every batch, position and feature, computed directly.
std::vector<double> expected_block(const Matrix& x, const Matrix& w_qkv, const Matrix& b_qkv,
                                   const Matrix& w_o, const Matrix& b_o) {
  const std::vector<double> xd(x.begin(), x.end());
  const std::vector<double> qkv = project(xd, w_qkv, b_qkv, B * L, DM, N);
  std::vector<double> heads(size_t(B) * L * DM);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < L; ++i) {
        auto feature = [&](int row, int part, int d) {
          return qkv[(size_t(b) * L + row) * N + part * DM + h * D + d];
        };
        std::vector<double> p(kLengths[b]);
        double max = -INFINITY, sum = 0.0;
        for (int j = 0; j < kLengths[b]; ++j) {
          double dot = 0.0;
          for (int d = 0; d < D; ++d) dot += feature(i, 0, d) * feature(j, 1, d);
          p[j] = dot / std::sqrt(double(D));
          max = std::fmax(max, p[j]);
        }
        for (double& e : p) sum += (e = std::exp(e - max));
        for (int d = 0; d < D; ++d) {
          double o = 0.0;
          for (int j = 0; j < kLengths[b]; ++j) o += p[j] / sum * feature(j, 2, d);
          heads[(size_t(b) * L + i) * DM + h * D + d] = o;
        }
      }
  std::vector<double> y = project(heads, w_o, b_o, B * L, DM, DM);
  for (size_t n = 0; n < y.size(); ++n) y[n] += xd[n];
  return y;
}

}  // namespace

int main() {
  std::mt19937 rng(11);
  auto random = [&](size_t count, float range) {
    std::uniform_real_distribution<float> uniform(-range, range);
    Matrix m(count);
    for (float& e : m) e = uniform(rng);
    return m;
  };
  const float fan_in = 1.0f / std::sqrt(float(DM));
  Matrix x = random(size_t(B) * L * DM, 1.0f), w_qkv = random(size_t(DM) * N, fan_in),
         b_qkv = random(N, 0.5f), w_o = random(size_t(DM) * DM, fan_in), b_o = random(DM, 0.5f);
  Matrix attention(x.size());
  std::vector<int32_t> lengths(kLengths, kLengths + B);

  using attnforge::ElementType;
  using attnforge::TensorView;
  const TensorView tx = TensorView::contiguous(x.data(), ElementType::f32, {B, L, DM});
  const TensorView tw_qkv = TensorView::contiguous(w_qkv.data(), ElementType::f32, {DM, N});
  const TensorView tb_qkv = TensorView::contiguous(b_qkv.data(), ElementType::f32, {N});
  const TensorView tw_o = TensorView::contiguous(w_o.data(), ElementType::f32, {DM, DM});
  const TensorView tb_o = TensorView::contiguous(b_o.data(), ElementType::f32, {DM});
  const TensorView tlengths = TensorView::contiguous(lengths.data(), ElementType::i32, {B});
  const TensorView tout = TensorView::contiguous(attention.data(), ElementType::f32, {B, L, DM});
  attnforge::LayerParameters parameters;
  parameters.w_qkv = &tw_qkv;
  parameters.b_qkv = &tb_qkv;
  parameters.w_o = &tw_o;
  parameters.b_o = &tb_o;
  attnforge::LayerOptions options;
  options.heads = H;
  options.attention.key_lengths = &tlengths;

  attnforge::KernelChoice choice;
  attnforge::Status status =
      attnforge::choose_layer_kernel(tx, nullptr, parameters, tout, options, &choice);
  if (status.ok()) status = attnforge::mha_layer(tx, parameters, tout, options);
  if (!status.ok()) {
    std::fprintf(stderr, "mha_layer failed (%s): %s\n", attnforge::to_string(status.code),
                 status.message.c_str());
    return 1;
  }
  // The residual connection.
  Matrix y(x.size());
  for (size_t n = 0; n < y.size(); ++n) y[n] = x[n] + attention[n];

  const std::vector<double> expected = expected_block(x, w_qkv, b_qkv, w_o, b_o);
  double max_error = 0.0;
  for (size_t n = 0; n < y.size(); ++n)
    max_error = std::fmax(max_error, std::fabs(y[n] - expected[n]));
  std::printf("kernel %s (%s, %s)\nmax |error| %.2e\n", choice.function.c_str(),
              choice.spec.c_str(), choice.bucket.c_str(), max_error);
  return max_error < 1e-4 ? 0 : 1;
}
