#include "kv_quantizers.h"

#include <algorithm>
#include <cmath>

#include "spec/half_precision.h"

namespace attnforge::reference {

namespace {

double largest_magnitude(const std::vector<double>& values, size_t begin, size_t end) {
  double largest = 0;
  for (size_t n = begin; n < end; ++n) largest = std::max(largest, std::fabs(values[n]));
  return largest;
}

}  // namespace

QuantizedRows quantize_rows(const std::vector<double>& values, int row_length) {
  QuantizedRows rows;
  for (size_t begin = 0; begin < values.size(); begin += row_length) {
    const size_t end = std::min(values.size(), begin + row_length);
    const double scale = largest_magnitude(values, begin, end) / 127;
    rows.scales.push_back(scale);
    for (size_t n = begin; n < end; ++n) {
      const int level = scale > 0 ? static_cast<int>(std::nearbyint(values[n] / scale)) : 0;
      rows.levels.push_back(level);
      rows.values.push_back(level * scale);
    }
  }
  return rows;
}

std::vector<double> q8_0_round_trip(const std::vector<double>& values) {
  constexpr size_t kBlock = 32;
  std::vector<double> read_back;
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    const size_t end = std::min(values.size(), begin + kBlock);
    const float d = static_cast<float>(largest_magnitude(values, begin, end) / 127);
    const float inverse = d > 0 ? 1.0f / d : 0.0f;
    const double stored_d = f16_bits_to_float(float_to_f16_bits(d));
    for (size_t n = begin; n < end; ++n) {
      read_back.push_back(std::round(static_cast<float>(values[n]) * inverse) * stored_d);
    }
  }
  return read_back;
}

double e4m3_value(int code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::nan("");
  const double magnitude = exponent == 0 ? mantissa / 8.0 * std::pow(2.0, -6)
                                         : (1 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

int e4m3_nearest_code(double value) {
  // Codes of the value's sign only: +-448 are equally near to a huge value in double.
  const int sign = std::signbit(value) ? 0x80 : 0x00;
  int best = sign;
  double best_distance = INFINITY;
  for (int code = sign; code < sign + 0x7F; ++code) {
    const double distance = std::fabs(e4m3_value(code) - value);
    if (distance < best_distance || (distance == best_distance && code % 2 == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return best;
}

QuantizationError quantization_error(const std::vector<double>& values,
                                     const std::vector<double>& read_back) {
  QuantizationError error;
  double squares = 0;
  for (size_t n = 0; n < values.size(); ++n) {
    const double e = std::fabs(read_back[n] - values[n]);
    error.max = std::max(error.max, e);
    squares += e * e;
  }
  error.rms = values.empty() ? 0 : std::sqrt(squares / values.size());
  return error;
}

}  // namespace attnforge::reference
