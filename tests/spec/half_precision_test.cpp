#include "spec/half_precision.h"

#include <gtest/gtest.h>

#include <cmath>

#include "spec/dtype_traits.h"

namespace attnforge::testing {
namespace {

TEST(HalfPrecision, F16RoundTripsRepresentableValues) {
  for (float value : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(f16_bits_to_float(float_to_f16_bits(value)), value) << value;
  }
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xc000);
  EXPECT_TRUE(std::isinf(f16_bits_to_float(float_to_f16_bits(1e6f))));
}

TEST(HalfPrecision, F16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to the even 1.
  EXPECT_EQ(f16_bits_to_float(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  float above = 1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20);
  EXPECT_EQ(f16_bits_to_float(float_to_f16_bits(above)), 1.0f + std::ldexp(1.0f, -10));
}

TEST(HalfPrecision, Bf16KeepsTheExponentRange) {
  EXPECT_NEAR(bf16_bits_to_float(float_to_bf16_bits(1e30f)), 1e30f, 1e30f / 128);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(round_to_dtype(0.1, DType::f32), static_cast<double>(0.1f));
}

}  // namespace
}  // namespace attnforge::testing
