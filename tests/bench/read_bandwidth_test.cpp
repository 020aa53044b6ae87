// The piece-by-piece read that rates a paged cache's scattered pages reads
// every element once, in any order of whole-line pieces.
#include "bench/read_bandwidth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace attnforge::bench {
namespace {

TEST(PieceReads, SumEveryElementOnceInAnyOrder) {
  for (size_t piece : {16, 32, 1024}) {  // one line, two lines, a 4 KB page
    SCOPED_TRACE(piece);
    const size_t pieces = 37;
    std::vector<float> data(piece * pieces);
    for (size_t n = 0; n < data.size(); ++n) data[n] = static_cast<float>(n % 5);
    const float expected = std::accumulate(data.begin(), data.end(), 0.0f);
    std::vector<uint32_t> order(pieces);
    std::iota(order.begin(), order.end(), 0);
    EXPECT_EQ(sum_of_pieces(data.data(), order, piece), expected);
    std::shuffle(order.begin(), order.end(), std::mt19937(3));
    EXPECT_EQ(sum_of_pieces(data.data(), order, piece), expected);
  }
}

TEST(PieceReads, RateBothOrdersOfAnyPageSize) {
  for (int piece_bytes : {4096, 100}) {  // 100 bytes round up to two lines
    const PieceReadBandwidth reads = measure_piece_read_bandwidth(2, piece_bytes, 4 << 20, 1);
    EXPECT_GT(reads.in_order, 0.0);
    EXPECT_GT(reads.shuffled, 0.0);
  }
}

}  // namespace
}  // namespace attnforge::bench
