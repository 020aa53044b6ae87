// The kv8 and kvfp8 quantizers against reference quantizers, and their error
// on K-like rows (two outlier channels) and V-like rows next to llama.cpp's
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

TEST(KvQuantization, EveryE4m3CodeReadsAsItsDefinition) {
  for (int code = 0; code < 256; ++code) {
    const double expected = reference::e4m3_value(code);
    const float value = e4m3_value(static_cast<uint8_t>(code));
    if (std::isnan(expected)) {
      EXPECT_EQ(value, code == 0x7F ? 480.0f : -480.0f) << "a NaN code reads as +-480";
    } else {
      EXPECT_EQ(value, expected) << "code " << code;
      EXPECT_EQ(std::signbit(value), code >= 0x80) << "code " << code;
    }
  }
  EXPECT_EQ(e4m3_value(0x7E), kE4m3Largest);
}

// Every finite code, the midpoints between neighbours (ties), values just
// either side of them, tiny, huge and random values: the nearest code, ties
// to even, saturating at 448.
TEST(KvQuantization, E4m3CodesAreTheNearestTiesToEven) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1e-30f,
                               -1e-30f,
                               448.0f,
                               449.0f,
                               464.0f,
                               480.0f,
                               1e30f,
                               -1e30f,
                               std::ldexp(1.0f, -10),
                               std::ldexp(3.0f, -11)};
  for (int code = 0; code < 0x7E; ++code) {
    const float low = e4m3_value(code), high = e4m3_value(code + 1), middle = (low + high) / 2;
    for (float v : {low, middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e9f)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-12.0f, 9.5f);
  for (int n = 0; n < 20000; ++n) {
    values.push_back((n % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng)));
  }
  for (float v : values) {
    EXPECT_EQ(int(e4m3_code(v)), reference::e4m3_nearest_code(v)) << "value " << v;
  }
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

// kvfp8's scale per KV head (here: per 4096 rows) next to kv8 and q8_0. e4m3
// keeps 3 mantissa bits at every magnitude: its error is relative, at most
// 1/16 of a value (half a step of 1/8), and 2^-10 of the scale below 2^-6.
TEST(KvQuantization, Fp8ErrorNextToKv8AndQ8_0) {
  for (bool outliers : {true, false}) {
    const std::vector<double> values = cache_rows(4096, outliers, 5);
    std::vector<float> as_float(values.begin(), values.end());
    const float scale = e4m3_scale(as_float.data(), static_cast<int64_t>(as_float.size()));
    std::vector<double> read_back;
    for (float v : as_float) read_back.push_back(double(e4m3_value(e4m3_code(v / scale))) * scale);
    const auto fp8 = reference::quantization_error(values, read_back);
    const auto kv8 = reference::quantization_error(values, quantize(values).values);
    const auto q8_0 = reference::quantization_error(values, reference::q8_0_round_trip(values));
    const char* data = outliers ? "K-like (2 outlier channels x10)" : "V-like N(0,1)";
    std::printf(
        "%s, 4096 rows of 128: kvfp8 per-head max %.4g rms %.4g; kv8 max %.4g rms %.4g; "
        "q8_0 max %.4g rms %.4g\n",
        data, fp8.max, fp8.rms, kv8.max, kv8.rms, q8_0.max, q8_0.rms);
    RecordProperty(outliers ? "k_like_kvfp8_rms" : "v_like_kvfp8_rms", std::to_string(fp8.rms));
    EXPECT_GT(fp8.rms, 0);
    for (size_t n = 0; n < values.size(); ++n) {
      const double bound = std::max(std::fabs(values[n]) / 16, std::ldexp(double(scale), -10));
      ASSERT_LE(std::fabs(read_back[n] - values[n]), bound * (1 + 1e-5)) << "value " << n;
    }
  }
}

}  // namespace
}  // namespace attnforge::testing
