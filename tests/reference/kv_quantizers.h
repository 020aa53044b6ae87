// Reference 8-bit quantizers in double, for checking the library's and for
// reporting its error next to llama.cpp's q8_0 on the same data.
#pragma once

#include <cstddef>
#include <vector>

namespace attnforge::reference {

// Each row of `row_length` values as int8 with a scale per row, max|x| / 127,
// rounded to nearest, ties to even: the levels, and the values they stand for.
struct QuantizedRows {
  std::vector<int> levels;
  std::vector<double> scales;  // one per row
  std::vector<double> values;
};
QuantizedRows quantize_rows(const std::vector<double>& values, int row_length);

// llama.cpp's q8_0: blocks of 32 values, each int8 with an f16 scale
// d = max|x| / 127 and level round(x / d) (ties away from zero), read back as level * d.
std::vector<double> q8_0_round_trip(const std::vector<double>& values);

// fp8 e4m3 (E4M3FN) from its definition: sign, 4 exponent bits with bias 7,
// 3 mantissa bits, subnormals at exponent 0, and 0x7F / 0xFF NaN.
double e4m3_value(int code);
// The finite code nearest to `value` by exhaustive search, ties to the even
// code (the even mantissa); past the largest, 448, the largest.
int e4m3_nearest_code(double value);

struct QuantizationError {
  double max = 0;
  double rms = 0;
};
QuantizationError quantization_error(const std::vector<double>& values,
                                     const std::vector<double>& read_back);

}  // namespace attnforge::reference
