// The specs a benchmark shape runs: non-causal and causal, bottom-right
// aligned where Lq != Lk; and the shape syntax.
#include "bench/bench_shapes.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace attnforge::bench {
namespace {

TEST(BenchShapes, SpecsOfAShapeAreCanonicalAndAlignCrossAttentionBottomRight) {
  using Specs = std::vector<std::string>;
  EXPECT_EQ(specs_for(parse_shape("1x8x2048x2048x64")),
            (Specs{"full.mha8.d64.f32", "causal.mha8.d64.f32"}));
  EXPECT_EQ(specs_for(parse_shape("2x4x1x300x128")),
            (Specs{"full.mha4.d128.f32", "causal.br.mha4.d128.f32"}));
}

TEST(BenchShapes, AShapeIsFiveSizes) {
  const Shape shape = parse_shape("1x8x512x256x64");
  EXPECT_EQ(shape.batch, 1);
  EXPECT_EQ(shape.heads, 8);
  EXPECT_EQ(shape.q_len, 512);
  EXPECT_EQ(shape.kv_len, 256);
  EXPECT_EQ(shape.head_dim, 64);
  EXPECT_THROW(parse_shape("1x8x512x64"), std::invalid_argument);
  EXPECT_THROW(parse_shape("1x8x0x512x64"), std::invalid_argument);
}

}  // namespace
}  // namespace attnforge::bench
