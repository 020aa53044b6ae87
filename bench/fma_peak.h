// The machine's fp32 FMA peak, measured in this process: N threads each run
// independent FMA chains for a fixed time. Benchmarks report kernels as a
// fraction of it, so the figure must come from the same machine and run.
#pragma once

#include <string>

namespace attnforge::bench {

struct FmaPeak {
  double gflops = 0.0;  // an FMA counts as 2 FLOPs
  std::string isa;      // the instruction set that reached it, e.g. "avx2+fma"
};

// Best of `trials` runs of `threads` threads together, each busy for `seconds`.
// Where AVX-512 exists both widths are measured and the faster one is kept,
// since some cores (e.g. AMD Zen 4) split 512-bit FMAs in two.
FmaPeak measure_fma_peak(int threads, double seconds = 0.2, int trials = 3);

}  // namespace attnforge::bench
