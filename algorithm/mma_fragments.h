// Which words of A and B a lane passes to mma.m16n8k16 in the GEMM prototype
// (mma_gemm_generator.cpp), for ints and for Halide Exprs alike.
//
// A word is a pair of f16 along K. The mma takes, in lane 4g + t, the words
// of its pairs t and t + 4 (of 8 per step) from rows g and g + 8 of A's tile
// and from column g of B's. It sums over its 16 k positions in any order,
// so which pairs of K feed its pairs t and t + 4 is ours to choose, as long
// as A and B agree: for steps 2j and 2j + 1, lane 4g + t passes pairs
// 16j + 4t to 16j + 4t + 3, step s taking word 2s as its pair t and 2s + 1
// as its pair t + 4. A lane's four words of a row or column are then
// adjacent: one 128-bit load.
#pragma once

namespace attnforge {

// The pair of K in `lane`'s word `word` (0-3: 2 * step + second) of the
// steps of pair `pair_of_steps`.
template <typename T, typename W>
T mma_k_pair(const T& pair_of_steps, const T& lane, const W& word) {
  return pair_of_steps * 16 + (lane % 4) * 4 + word;
}

// The row of A (`half` 0 or 1: rows g, g + 8) or column of B (`half` 0) that
// `lane` passes, of the tile starting at `first`.
template <typename T>
T mma_fragment_row(const T& first, const T& lane, int half) {
  return first + half * 8 + lane / 4;
}

}  // namespace attnforge
