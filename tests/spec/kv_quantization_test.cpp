// The kv8 quantizer against the reference quantizer, and its error on
// K-like rows (two outlier channels) and V-like rows next to llama.cpp's
// q8_0 on the same data.
#include "spec/kv_quantization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/reference/kv_quantizers.h"

namespace attnforge::testing {
namespace {

constexpr int kHeadDim = 128;

// Rows of N(0, 1) values; K caches have channels far larger than the rest.
std::vector<double> cache_rows(int rows, bool outlier_channels, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<size_t>(rows) * kHeadDim);
  for (size_t n = 0; n < values.size(); ++n) {
    const int channel = static_cast<int>(n % kHeadDim);
    const bool outlier = outlier_channels && (channel == 3 || channel == 77);
    values[n] = static_cast<float>(normal(rng) * (outlier ? 10.0 : 1.0));
  }
  return values;
}

// The library's int8 rows read back, and their levels.
struct Quantized {
  std::vector<int> levels;
  std::vector<double> values;
};
Quantized quantize(const std::vector<double>& values) {
  Quantized q;
  std::vector<float> row(kHeadDim);
  std::vector<int8_t> levels(kHeadDim);
  for (size_t begin = 0; begin < values.size(); begin += kHeadDim) {
    for (int d = 0; d < kHeadDim; ++d) row[d] = static_cast<float>(values[begin + d]);
    const float scale = quantize_row(row.data(), kHeadDim, levels.data());
    for (int d = 0; d < kHeadDim; ++d) {
      q.levels.push_back(levels[d]);
      q.values.push_back(dequantize(levels[d], scale));
    }
  }
  return q;
}

TEST(KvQuantization, MatchesTheReferenceQuantizer) {
  const std::vector<double> values = cache_rows(512, true, 3);
  const Quantized q = quantize(values);
  const reference::QuantizedRows expected = reference::quantize_rows(values, kHeadDim);
  int differing = 0;
  for (size_t n = 0; n < values.size(); ++n) {
    const double scale = expected.scales[n / kHeadDim];
    // f32 and double may round a value within 1e-5 of a tie differently.
    const double ratio = values[n] / scale,
                 tie_distance = std::fabs(std::fabs(ratio - std::trunc(ratio)) - 0.5);
    if (q.levels[n] != expected.levels[n]) {
      ++differing;
      EXPECT_LT(tie_distance, 1e-5) << "value " << n << " = " << values[n];
    }
    EXPECT_LE(std::fabs(q.values[n] - values[n]), scale * (0.5 + 1e-5)) << "value " << n;
  }
  EXPECT_LE(differing, 2);
}

TEST(KvQuantization, ZeroRowsAndExtremesStayExact) {
  std::vector<float> row(kHeadDim, 0.0f);
  std::vector<int8_t> levels(kHeadDim, 1);
  EXPECT_EQ(quantize_row(row.data(), kHeadDim, levels.data()), 0.0f);
  for (int8_t level : levels) EXPECT_EQ(level, 0);
  row[5] = -3.5f;
  row[9] = 3.5f;
  const float scale = quantize_row(row.data(), kHeadDim, levels.data());
  EXPECT_EQ(levels[5], -127);
  EXPECT_EQ(levels[9], 127);
  EXPECT_EQ(levels[0], 0);
  EXPECT_FLOAT_EQ(dequantize(levels[9], scale), 3.5f);
}

// Per-row scales cost accuracy where a row has outlier channels: every other
// value of the row gets the outliers' step. Reported next to q8_0 (a scale per
// 32 values); the bound each must meet is half its step.
TEST(KvQuantization, ErrorNextToQ8_0) {
  for (bool outliers : {true, false}) {
    const std::vector<double> values = cache_rows(4096, outliers, 5);
    const auto per_row = reference::quantization_error(values, quantize(values).values);
    const auto q8_0 = reference::quantization_error(values, reference::q8_0_round_trip(values));
    const char* data = outliers ? "K-like (2 outlier channels x10)" : "V-like N(0,1)";
    std::printf("%s, 4096 rows of 128: kv8 per-row max %.4g rms %.4g; q8_0 max %.4g rms %.4g\n",
                data, per_row.max, per_row.rms, q8_0.max, q8_0.rms);
    RecordProperty(outliers ? "k_like_kv8_rms" : "v_like_kv8_rms", std::to_string(per_row.rms));
    RecordProperty(outliers ? "k_like_q8_0_rms" : "v_like_q8_0_rms", std::to_string(q8_0.rms));
    // A uniform rounding error has rms step / sqrt(12); the steps are max / 127.
    double largest = 0;
    for (double v : values) largest = std::max(largest, std::fabs(v));
    EXPECT_LE(per_row.max, largest / 254 * (1 + 1e-5));
    EXPECT_GT(per_row.rms, 0);
    // Without outliers a row's and a block's largest values are alike.
    if (!outliers) EXPECT_LT(per_row.rms, 1.5 * q8_0.rms);
  }
}

}  // namespace
}  // namespace attnforge::testing
