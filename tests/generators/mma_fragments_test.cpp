// The GEMM prototype's choice of words per lane (mma_fragments.h), run
// through mma.m16n8k16 as the PTX ISA lays out its fragments, one warp
// simulated on the CPU: C = A B must come out, with A and B agreeing on
// which pairs of K feed each step. (On a GPU, bench_mma_gemm checks the
// kernel itself.)
#include "generators/mma_fragments.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <random>
#include <vector>

namespace attnforge {
namespace {

// Words are pairs of elements along K; small integers keep sums exact.
struct Gemm {
  int m, n, k;
  std::vector<double> a, b;  // A row-major M x K, B column-major K x N
  double a_at(int row, int kk) const { return a[size_t(row) * k + kk]; }
  double b_at(int kk, int column) const { return b[size_t(column) * k + kk]; }
};

Gemm random_gemm(int m, int n, int k) {
  Gemm gemm{m, n, k, std::vector<double>(size_t(m) * k), std::vector<double>(size_t(k) * n)};
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> value(-4, 4);
  for (double& x : gemm.a) x = value(rng);
  for (double& x : gemm.b) x = value(rng);
  return gemm;
}

using Pair = std::array<double, 2>;  // one 32-bit word
struct Fragments {
  std::array<std::array<Pair, 4>, 32> a;
  std::array<std::array<Pair, 2>, 32> b;
};

// D += A B for one tile, from the fragments as the PTX ISA lays them out
// (lane 4g + t): A words (row g, k 2t), (g + 8, 2t), (g, 2t + 8),
// (g + 8, 2t + 8); B words (k 2t, column g), (2t + 8, g); D (g, 2t + e),
// (g + 8, 2t + e) as d[e + 2h].
void mma_m16n8k16(const Fragments& in, std::array<std::array<double, 4>, 32>& d) {
  double a[16][16], b[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int e = 0; e < 2; ++e) {
      a[g][2 * t + e] = in.a[lane][0][e];
      a[g + 8][2 * t + e] = in.a[lane][1][e];
      a[g][2 * t + 8 + e] = in.a[lane][2][e];
      a[g + 8][2 * t + 8 + e] = in.a[lane][3][e];
      b[2 * t + e][g] = in.b[lane][0][e];
      b[2 * t + 8 + e][g] = in.b[lane][1][e];
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int h = 0; h < 2; ++h) {
      for (int e = 0; e < 2; ++e) {
        for (int kk = 0; kk < 16; ++kk) d[lane][e + 2 * h] += a[g + 8 * h][kk] * b[kk][2 * t + e];
      }
    }
  }
}

// Which pair of K a lane passes for A's and B's word `word` (0-3) of the
// steps of pair `j`.
using PairChoice = std::function<int(int j, int lane, int word)>;

// C as one warp per tile computes it, every step's fragments chosen by
// `a_pair` and `b_pair`.
std::vector<double> simulated_gemm(const Gemm& gemm, const PairChoice& a_pair,
                                   const PairChoice& b_pair) {
  std::vector<double> c(size_t(gemm.m) * gemm.n);
  for (int row0 = 0; row0 < gemm.m; row0 += 16) {
    for (int column0 = 0; column0 < gemm.n; column0 += 8) {
      std::array<std::array<double, 4>, 32> d{};
      for (int j = 0; j < gemm.k / 32; ++j) {
        for (int step = 0; step < 2; ++step) {
          Fragments in;
          for (int lane = 0; lane < 32; ++lane) {
            for (int second = 0; second < 2; ++second) {
              const int word = 2 * step + second;
              for (int half = 0; half < 2; ++half) {
                const int row = mma_fragment_row(row0, lane, half), pair = a_pair(j, lane, word);
                in.a[lane][2 * second + half] = {gemm.a_at(row, 2 * pair),
                                                 gemm.a_at(row, 2 * pair + 1)};
              }
              const int column = mma_fragment_row(column0, lane, 0), pair = b_pair(j, lane, word);
              in.b[lane][second] = {gemm.b_at(2 * pair, column), gemm.b_at(2 * pair + 1, column)};
            }
          }
          mma_m16n8k16(in, d);
        }
      }
      for (int lane = 0; lane < 32; ++lane) {
        for (int h = 0; h < 2; ++h) {
          for (int e = 0; e < 2; ++e) {
            const int row = row0 + 8 * h + lane / 4, column = column0 + 2 * (lane % 4) + e;
            c[size_t(row) * gemm.n + column] = d[lane][e + 2 * h];
          }
        }
      }
    }
  }
  return c;
}

int mismatches(const Gemm& gemm, const std::vector<double>& c) {
  int wrong = 0;
  for (int row = 0; row < gemm.m; ++row) {
    for (int column = 0; column < gemm.n; ++column) {
      double exact = 0;
      for (int kk = 0; kk < gemm.k; ++kk) exact += gemm.a_at(row, kk) * gemm.b_at(kk, column);
      wrong += c[size_t(row) * gemm.n + column] != exact;
    }
  }
  return wrong;
}

const PairChoice kOurPairs = [](int j, int lane, int word) { return mma_k_pair(j, lane, word); };

TEST(MmaFragments, OneWarpPerTileComputesTheProduct) {
  for (const auto& [m, n, k] : {std::array{16, 8, 32}, std::array{32, 24, 96}}) {
    const Gemm gemm = random_gemm(m, n, k);
    EXPECT_EQ(mismatches(gemm, simulated_gemm(gemm, kOurPairs, kOurPairs)), 0)
        << m << "x" << n << "x" << k;
  }
}

// The check can fail: B taking its two words of a step the other way round.
TEST(MmaFragments, AAndBDisagreeingOnThePairsIsWrong) {
  const Gemm gemm = random_gemm(16, 8, 32);
  const PairChoice swapped = [](int j, int lane, int word) {
    return mma_k_pair(j, lane, word ^ 1);
  };
  EXPECT_GT(mismatches(gemm, simulated_gemm(gemm, kOurPairs, swapped)), 0);
}

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
