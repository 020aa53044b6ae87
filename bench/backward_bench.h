// The backward pass's benchmark: dQ, dK and dV of each shape and spec from the
// naive backward schedule, the backward presets the host runs, Halide's x86 autoschedulers on the
// backward algorithm, OpenBLAS's unfused backward (bench/openblas_backward.h) and PyTorch's SDPA
// backward, timed in one run on the same inputs (the
// forward's out and lse from an online kernel with .lse). Rated at 2.5x the forward's FLOPs
// (FlashAttention's convention) against the FMA peak measured in the run. Every implementation's
// gradients are checked against the naive kernel's before it is timed.
#pragma once

#include <string>
#include <vector>

#include "autotune/backward_problem.h"
#include "bench/bench_rows.h"
#include "bench/bench_shapes.h"
#include "bench/timing.h"

namespace attnforge::bench {

struct BackwardBenchOptions {
  std::vector<Shape> shapes;
  std::vector<std::string> specs;  // specs without .lse; empty: full and causal MHA in f32
  int threads = 2;
  TimingOptions timing;
  bool autoschedulers = true;
  bool presets = true;
  std::vector<std::string> preset_names;  // backward presets; empty: every one the host runs
  std::vector<std::string> schedules;     // backward schedule JSON, rows "schedule 1", ...
  std::string torch_python;               // empty: no torch row
};

// The problem's forward out and lse, from the host's online preset (with .lse).
void run_forward_with_lse(const AttentionSpec& spec, autotune::BackwardProblem& in);

// Runs every row; prints progress and what was not timed to stderr.
std::vector<BenchRow> run_backward_bench(const BackwardBenchOptions& options);

}  // namespace attnforge::bench
