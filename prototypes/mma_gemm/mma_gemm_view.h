// The mma_gemm generator's output as a view of C (M x N floats, row-major):
// dimensions (e, t, ni, h, g, mi, wn, wm), element (row, column) =
// ((wm * tiles_m + mi) * 16 + 8h + g, (wn * tiles_n + ni) * 8 + 2t + e),
// so that each lane's part of C is one lane of its accumulators.
#pragma once

#include <HalideRuntime.h>

#include <array>

namespace attnforge {

inline std::array<halide_dimension_t, 8> mma_gemm_c_dims(int m, int n, int tiles_m, int tiles_n) {
  return {{{0, 2, 1},
           {0, 4, 2},
           {0, tiles_n, 8},
           {0, 2, 8 * n},
           {0, 8, n},
           {0, tiles_m, 16 * n},
           {0, n / (8 * tiles_n), 8 * tiles_n},
           {0, m / (16 * tiles_m), 16 * tiles_m * n}}};
}

}  // namespace attnforge
