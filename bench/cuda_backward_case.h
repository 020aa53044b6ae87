// The CUDA benchmark's backward rows (bench_cuda --backward): per spec and
// shape, the GPU backward presets on the target and, with a Python that has
// torch, PyTorch's SDPA backward on the CUDA device, timed in turns. Every
// implementation's gradients are checked against the CPU's (an x86 backward
// preset's) before they are timed; the CPU is no GPU baseline, so x naive
// reads 0.
// Rated at 2.5x the forward's FLOPs against the GPU's measured FMA peak.
#pragma once

#include <Halide.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/bench_rows.h"
#include "bench/bench_shapes.h"
#include "bench/cuda/gpu_info.h"

namespace attnforge::bench {

struct GpuBackwardOptions {
  Halide::Target target;
  GpuPeaks peaks;
  std::string torch_python;  // empty: no torch row
  double min_seconds = 0.3;
};

struct GpuBackwardResult {
  std::vector<BenchRow> rows;
  std::vector<std::pair<std::string, std::string>> skipped;  // (what, why)
  int wrong = 0;
};

GpuBackwardResult run_gpu_backward_case(const AttentionSpec& spec, const Shape& shape,
                                        const GpuBackwardOptions& options);

}  // namespace attnforge::bench
