#include "spec/dtype_traits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "spec/half_precision.h"

namespace attnforge::testing {
namespace {

TEST(DTypeTraits, EveryDTypeHasItsOwnRowWhoseNameParsesBack) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    const DTypeTraits& traits = traits_of(dtype);
    EXPECT_EQ(traits.dtype, dtype);
    EXPECT_EQ(to_string(dtype), traits.name);
    AttentionSpec spec = AttentionSpec::parse("full.mha2.d16." + std::string(traits.name));
    EXPECT_EQ(spec.dtype, dtype) << traits.name;
    EXPECT_EQ(traits.halide_type.bytes(), traits.bytes) << traits.name;
  }
}

TEST(DTypeTraits, StoredValuesRoundToNearestEvenAndReadBack) {
  const DTypeTraits& f16 = traits_of(DType::f16);
  const DTypeTraits& bf16 = traits_of(DType::bf16);
  uint16_t bits = 0;
  f16.store(&bits, 1.0f + 1.0f / 2048);  // half an f16 ulp above 1: a tie, to even: 1
  EXPECT_EQ(bits, float_to_f16_bits(1.0f));
  EXPECT_EQ(f16.load(&bits), 1.0f);
  bf16.store(&bits, 3.0f);
  EXPECT_EQ(bits, 0x4040);
  EXPECT_EQ(bf16.load(&bits), 3.0f);
  float f = 0;
  traits_of(DType::f32).store(&f, 0.1f);
  EXPECT_EQ(traits_of(DType::f32).load(&f), 0.1f);
  EXPECT_EQ(round_to_dtype(0.1, DType::bf16), static_cast<double>(bf16_bits_to_float(0x3dcd)));
}

TEST(DTypeTraits, QuietNansReadBackAsNan) {
  for (const DTypeTraits& traits : dtype_table()) {
    uint32_t bits = traits.quiet_nan_bits;
    EXPECT_TRUE(std::isnan(traits.load(&bits))) << traits.name;
  }
}

TEST(DTypeTraits, CheckerToleranceCoversAFewUlpsOfTheStorageType) {
  // A few ulps at 1.0: 2^-23 for f32 (tuned far looser: accumulation order),
  // 2^-10 for f16, 2^-7 for bf16.
  EXPECT_GE(traits_of(DType::f16).check_tolerance, 2 * std::ldexp(1.0, -10));
  EXPECT_GE(traits_of(DType::bf16).check_tolerance, 2 * std::ldexp(1.0, -7));
  EXPECT_LT(traits_of(DType::f32).check_tolerance, traits_of(DType::f16).check_tolerance);
}

}  // namespace
}  // namespace attnforge::testing
