#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu_info.h"

namespace attnforge::bench {

namespace {

constexpr int kChains = 8;  // independent FMA chains per thread hide latency
constexpr int kIterations = 4096;
constexpr int kThreads = 256;

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
  }
}

__global__ void fp32_fma_loop(float* out, float a, float b) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = threadIdx.x + c;
  for (int n = 0; n < kIterations; ++n) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], a, b);
  }
  float sum = 0.0f;
  for (int c = 0; c < kChains; ++c) sum += acc[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void f16_fma_loop(float* out, float a, float b) {
  __half2 acc[kChains];
  const __half2 ha = __float2half2_rn(a), hb = __float2half2_rn(b);
  for (int c = 0; c < kChains; ++c) acc[c] = __float2half2_rn(threadIdx.x * 1e-3f + c);
  for (int n = 0; n < kIterations; ++n) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = __hfma2(acc[c], ha, hb);
  }
  float sum = 0.0f;
  for (int c = 0; c < kChains; ++c) sum += __low2float(acc[c]) + __high2float(acc[c]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Every float4 of `data` read once, by a grid that strides over it; each
// thread stores its sum, so that no read can be dropped.
__global__ void read_loop(const float4* data, size_t count, float* out) {
  const size_t thread = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float sum = 0.0f;
  for (size_t n = thread; n < count; n += size_t(gridDim.x) * blockDim.x) {
    const float4 x = __ldg(data + n);
    sum += (x.x + x.y) + (x.z + x.w);
  }
  out[thread] = sum;
}

// Blocks for a launch that fills every multiprocessor several times over.
int saturating_blocks() {
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return prop.multiProcessorCount * 8;
}

// The fastest of five timed launches after a warm-up, in ms.
template <typename Launch>
float best_launch_ms(Launch launch, const char* what) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  launch();  // warm-up
  float best_ms = 1e30f;
  for (int run = 0; run < 5; ++run) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    check(cudaEventSynchronize(stop), what);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, start, stop);
    best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best_ms;
}

// In TFLOP/s (an FMA is 2 FLOPs, an HFMA2 4).
template <typename Kernel>
double peak_of(Kernel kernel, double flops_per_fma) {
  const int blocks = saturating_blocks();
  float* out = nullptr;
  check(cudaMalloc(&out, sizeof(float) * blocks * kThreads), "cudaMalloc");
  const float ms = best_launch_ms([&] { kernel<<<blocks, kThreads>>>(out, 0.999f, 1e-3f); },
                                  "peak kernel");
  cudaFree(out);
  const double fmas = double(blocks) * kThreads * kChains * kIterations;
  return fmas * flops_per_fma / (ms * 1e-3) / 1e12;
}

// Device memory read bandwidth in GB/s, over a buffer far larger than any L2.
double read_bandwidth() {
  constexpr size_t kBytes = size_t(1) << 30;
  const int blocks = saturating_blocks();
  float4* data = nullptr;
  float* out = nullptr;
  check(cudaMalloc(&data, kBytes), "cudaMalloc");
  check(cudaMalloc(&out, sizeof(float) * blocks * kThreads), "cudaMalloc");
  check(cudaMemset(data, 0, kBytes), "cudaMemset");
  const size_t count = kBytes / sizeof(float4);
  const float ms = best_launch_ms(
      [&] { read_loop<<<blocks, kThreads>>>(data, count, out); }, "bandwidth kernel");
  cudaFree(out);
  cudaFree(data);
  return double(kBytes) / (ms * 1e-3) / 1e9;
}

}  // namespace

// Through the driver API, loaded as libcuda.so.1: a driver older than this
// toolkit's runtime still runs the Halide kernels (PTX for sm_80), so the
// device is found without the runtime.
GpuInfo gpu_info() {
  GpuInfo info;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    info.why = "no CUDA driver (libcuda.so.1 not found)";
    return info;
  }
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  using Attribute = int (*)(int*, int, int);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(dlsym(driver, "cuDeviceGet"));
  auto name = reinterpret_cast<Name>(dlsym(driver, "cuDeviceGetName"));
  auto attribute = reinterpret_cast<Attribute>(dlsym(driver, "cuDeviceGetAttribute"));
  int devices = 0, device = 0;
  if (!init || !count || !get || !name || !attribute || init(0) != 0 || count(&devices) != 0 ||
      devices < 1 || get(&device, 0) != 0) {
    info.why = "the CUDA driver reports no device";
    return info;
  }
  char text[256] = {};
  name(text, sizeof(text) - 1, device);
  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, COMPUTE_CAPABILITY_MAJOR and _MINOR.
  int sms = 0, major = 0, minor = 0;
  attribute(&sms, 16, device);
  attribute(&major, 75, device);
  attribute(&minor, 76, device);
  info.available = true;
  info.name = text;
  info.multiprocessors = sms;
  info.compute_capability = major * 10 + minor;
  return info;
}

GpuPeaks measure_gpu_peaks() {
  return {peak_of(fp32_fma_loop, 2.0), peak_of(f16_fma_loop, 4.0), read_bandwidth()};
}

}  // namespace attnforge::bench
