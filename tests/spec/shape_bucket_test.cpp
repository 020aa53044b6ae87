#include "spec/shape_bucket.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace attnforge {
namespace {

TEST(ShapeBucket, LengthsRoundUpToPowersOfTwo) {
  EXPECT_EQ(shape_bucket(1, 2048, 2048), "b1.q2048.k2048");
  EXPECT_EQ(shape_bucket(1, 1025, 2000), "b1.q2048.k2048");
  EXPECT_EQ(shape_bucket(3, 2, 17), "b4.q16.k32");
  EXPECT_EQ(shape_bucket(1, 16, 1), "b1.q16.k16");
  EXPECT_NE(shape_bucket(1, 2049, 2048), shape_bucket(1, 2048, 2048));
  EXPECT_THROW(shape_bucket(0, 16, 16), std::invalid_argument);
}

TEST(ShapeBucket, OneQueryRowIsABucketOfItsOwn) {
  EXPECT_EQ(shape_bucket(3, 1, 17), "b4.q1.k32");
  EXPECT_EQ(query_bucket(1), 1);
  EXPECT_EQ(query_bucket(2), 16);
  EXPECT_EQ(length_bucket(1), 16);  // key lengths keep their floor
  EXPECT_EQ(parse_shape_bucket("b1.q1.k32768").q_len, 1);
  EXPECT_THROW(parse_shape_bucket("b1.q1.k1"), std::invalid_argument);
}

TEST(ShapeBucket, ParsesItsOwnTextOnly) {
  ShapeBucket bucket = parse_shape_bucket("b4.q16.k32");
  EXPECT_EQ(bucket.batch, 4);
  EXPECT_EQ(bucket.q_len, 16);
  EXPECT_EQ(bucket.kv_len, 32);
  for (const char* bad : {"", "b1.q2048", "b1.q2000.k2048", "b1.q2048.k2048x", "b0.q16.k16",
                          "q16.k16.b1", "b1.q-16.k16", "b1.q2.k16"}) {
    EXPECT_THROW(parse_shape_bucket(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace attnforge
