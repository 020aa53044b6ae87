// The GEMM prototype's choice of words per lane (mma_fragments.h): what
// makes a lane's words one load. That the choice computes C = A B is checked
// by running the generator on the CPU (mma_gemm_cpu_test.cpp).
#include "algorithm/mma_fragments.h"

#include <gtest/gtest.h>

#include <vector>

namespace attnforge {
namespace {

// A lane's four words of a row are adjacent and 16-byte aligned, the same
// in every group, and the four lanes of a group pass each pair of K once.
TEST(MmaFragments, ALanesFourWordsAreAdjacentAndTheLanesOfAGroupCoverK) {
  std::vector<int> passed(32, 0);
  for (int t = 0; t < 4; ++t) {
    const int first = mma_k_pair(1, t, 0);
    EXPECT_EQ(first % 4, 0);
    for (int word = 0; word < 4; ++word) {
      EXPECT_EQ(mma_k_pair(1, t, word), first + word);
      for (int g = 1; g < 8; ++g) EXPECT_EQ(mma_k_pair(1, 4 * g + t, word), first + word);
      ++passed[mma_k_pair(1, t, word)];
    }
  }
  for (int pair = 0; pair < 32; ++pair) EXPECT_EQ(passed[pair], pair >= 16 ? 1 : 0) << pair;
}

}  // namespace
}  // namespace attnforge
