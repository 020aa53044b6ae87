// The GPU the CUDA benchmark runs on, and its measured peaks: fp32 FMA and
// f16 paired FMA (HFMA2) throughput of a loop of independent chains on every
// multiprocessor, the GPU counterpart of bench/fma_peak, and the device
// memory's read bandwidth (16-byte loads over 1 GiB).
#pragma once

#include <string>

namespace attnforge::bench {

struct GpuInfo {
  bool available = false;
  std::string why;  // when not available
  std::string name;
  int multiprocessors = 0;
  int compute_capability = 0;  // e.g. 90
};

GpuInfo gpu_info();

struct GpuPeaks {
  double fp32_tflops = 0.0;
  double f16_tflops = 0.0;
  double read_gbps = 0.0;
};

// Throws std::runtime_error when the CUDA runtime cannot run (e.g. a driver
// older than the toolkit).
GpuPeaks measure_gpu_peaks();

}  // namespace attnforge::bench
