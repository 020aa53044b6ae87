// The tensor-core GEMM prototype against cuBLAS, f16 inputs and f32
// accumulation, C = A B at M = N = K (4096 by default), in one process:
// median times, TFLOP/s, and each result checked against a double-precision
// reference at sampled entries. Each variant runs twice: on the full
// operands, and with every row of A and column of B the first (read at a
// stride of 0, so resident in L1): the most its instructions allow. Needs a
// CUDA GPU; exits 3 without one, 1 on a wrong or failed result.
//
// usage: bench_mma_gemm [--size N] [--runs R] [--json FILE]
#include <HalideBuffer.h>
#include <HalideRuntimeCuda.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "attnforge_mma_gemm_2x4_w1x1.h"
#include "attnforge_mma_gemm_2x4_w2x2.h"
#include "attnforge_mma_gemm_4x4_w1x1.h"
#include "attnforge_mma_gemm_4x4_w2x2.h"
#include "prototypes/mma_gemm/mma_gemm_view.h"
#include "spec/half_precision.h"

namespace {

using Halide::Runtime::Buffer;

struct Matrices {
  int n;
  std::vector<uint16_t> a, b;  // A row-major (M x K), B column-major (K x N), f16 bits
};

Matrices random_matrices(int n) {
  Matrices m{n, std::vector<uint16_t>(size_t(n) * n), std::vector<uint16_t>(size_t(n) * n)};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  for (auto* matrix : {&m.a, &m.b}) {
    for (uint16_t& x : *matrix) x = attnforge::float_to_f16_bits(value(rng));
  }
  return m;
}

// The largest error at sampled entries, relative to the entry's magnitude
// sum (the scale of f32 rounding in a dot product).
double sampled_error(const Matrices& m, const std::function<float(int, int)>& c) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> index(0, m.n - 1);
  double worst = 0;
  for (int s = 0; s < 2000; ++s) {
    const int row = index(rng), column = index(rng);
    double exact = 0, scale = 0;
    for (int k = 0; k < m.n; ++k) {
      const double term = double(attnforge::f16_bits_to_float(m.a[size_t(row) * m.n + k])) *
                          attnforge::f16_bits_to_float(m.b[size_t(column) * m.n + k]);
      exact += term;
      scale += std::abs(term);
    }
    worst = std::max(worst, std::abs(c(row, column) - exact) / std::max(scale, 1e-30));
  }
  return worst;
}

double median_ms(const std::function<void()>& run, const std::function<void()>& sync, int runs) {
  run();
  sync();
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    sync();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Row {
  std::string impl;
  bool resident;  // operands one row of A and one column of B
  double ms, tflops, error;
};

// The same product with every row of A its first row and every column of B
// its first column: as a kernel reads them through a stride of 0, the
// operands stay in L1 and the time is the kernel's own instructions.
Matrices first_row_and_column(const Matrices& m) {
  Matrices resident = m;
  const size_t n = m.n;
  for (size_t i = 1; i < n; ++i) {
    std::copy_n(m.a.begin(), n, resident.a.begin() + i * n);
    std::copy_n(m.b.begin(), n, resident.b.begin() + i * n);
  }
  return resident;
}

using Kernel = int (*)(halide_buffer_t*, halide_buffer_t*, halide_buffer_t*);

// Ours, warp tiles of `tm` x `tn` mma tiles, C through the generator's view
// (prototypes/mma_gemm/mma_gemm_view.h). With
// `resident`, A and B are their first row and column at a stride of 0
// (m from first_row_and_column).
Row run_ours(const Matrices& m, bool resident, Kernel kernel, const char* name, int tm, int tn,
             int runs) {
  const int n = m.n;
  const int row_stride = resident ? 0 : n / 2;
  std::vector<uint32_t> a_words(resident ? n / 2 : size_t(n) * n / 2),
      b_words(resident ? n / 2 : size_t(n) * n / 2);
  std::memcpy(a_words.data(), m.a.data(), a_words.size() * 4);
  std::memcpy(b_words.data(), m.b.data(), b_words.size() * 4);
  const halide_dimension_t operand_dims[] = {{0, n / 2, 1}, {0, n, row_stride}};
  Buffer<uint32_t, 2> a(a_words.data(), 2, operand_dims), b(b_words.data(), 2, operand_dims);
  std::vector<float> c_storage(size_t(n) * n, 0.f);
  Buffer<float, 8> c(c_storage.data(), 8, attnforge::mma_gemm_c_dims(n, n, tm, tn).data());
  const halide_device_interface_t* cuda = halide_cuda_device_interface();
  a.set_host_dirty();
  b.set_host_dirty();
  if (a.copy_to_device(cuda) || b.copy_to_device(cuda) || c.device_malloc(cuda)) {
    throw std::runtime_error(std::string(name) + ": device buffers failed");
  }
  auto run = [&] {
    if (kernel(a.raw_buffer(), b.raw_buffer(), c.raw_buffer()) != 0) {
      throw std::runtime_error(std::string(name) + " failed");
    }
  };
  const double ms = median_ms(
      run, [&] { c.device_sync(); }, runs);
  c.set_device_dirty();
  c.copy_to_host();
  const double error =
      sampled_error(m, [&](int row, int column) { return c_storage[size_t(row) * n + column]; });
  return {name, resident, ms, 2.0 * n * n * n / ms / 1e9, error};
}

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    if ((call) != 0) throw std::runtime_error(std::string(#call) + " failed"); \
  } while (0)

Row run_cublas(const Matrices& m, int runs) {
  const int n = m.n;
  const size_t bytes16 = m.a.size() * 2, bytes32 = size_t(n) * n * 4;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes16));
  CHECK_CUDA(cudaMalloc(&b, bytes16));
  CHECK_CUDA(cudaMalloc(&c, bytes32));
  CHECK_CUDA(cudaMemcpy(a, m.a.data(), bytes16, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, m.b.data(), bytes16, cudaMemcpyHostToDevice));
  cublasHandle_t handle;
  CHECK_CUDA(cublasCreate(&handle));
  const float one = 1.f, zero = 0.f;
  // Column-major C^T (N x M) = B^T A^T: B column-major is op T of a K x N
  // matrix, A row-major is A^T column-major.
  auto run = [&] {
    CHECK_CUDA(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, b, CUDA_R_16F, n, a,
                            CUDA_R_16F, n, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  };
  const double ms = median_ms(
      run, [] { cudaDeviceSynchronize(); }, runs);
  std::vector<float> result(size_t(n) * n);
  CHECK_CUDA(cudaMemcpy(result.data(), c, bytes32, cudaMemcpyDeviceToHost));
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  const double error =
      sampled_error(m, [&](int row, int column) { return result[size_t(row) * n + column]; });
  return {"cublas", false, ms, 2.0 * n * n * n / ms / 1e9, error};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The tensor-core GEMM prototype against cuBLAS (f16 in, f32 accumulation)"};
  int size = 4096, runs = 20;
  std::string json_path;
  app.add_option("--size", size, "M = N = K, a multiple of 128")->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "timed runs per implementation")->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "write the rows here");
  CLI11_PARSE(app, argc, argv);
  if (size % 128 != 0) {
    std::fprintf(stderr, "--size: %d is not a multiple of 128\n", size);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 3;
  }
  const Matrices m = random_matrices(size), resident = first_row_and_column(m);
  // Ours: mma tiles per warp, then warps per block (M x N); each also with
  // its operands resident, the most it could do with no memory traffic.
  struct Variant {
    Kernel kernel;
    const char* name;
    int tm, tn;
  };
  const Variant variants[] = {{attnforge_mma_gemm_2x4_w1x1, "mma_gemm_2x4_w1x1", 2, 4},
                              {attnforge_mma_gemm_4x4_w1x1, "mma_gemm_4x4_w1x1", 4, 4},
                              {attnforge_mma_gemm_2x4_w2x2, "mma_gemm_2x4_w2x2", 2, 4},
                              {attnforge_mma_gemm_4x4_w2x2, "mma_gemm_4x4_w2x2", 4, 4}};
  std::vector<Row> rows = {run_cublas(m, runs)};
  // A variant that fails is reported and costs only its own row.
  nlohmann::json failures = nlohmann::json::array();
  for (bool is_resident : {false, true}) {
    for (const Variant& v : variants) {
      try {
        rows.push_back(
            run_ours(is_resident ? resident : m, is_resident, v.kernel, v.name, v.tm, v.tn, runs));
      } catch (const std::exception& error) {
        std::fprintf(stderr, "%s (%s): %s\n", v.name, is_resident ? "resident" : "full",
                     error.what());
        failures.push_back({{"impl", v.name},
                            {"operands", is_resident ? "resident" : "full"},
                            {"error", error.what()}});
      }
    }
  }
  // Entries with f16 inputs and f32 accumulation: a relative error well under 1e-3.
  constexpr double kTolerance = 1e-3;
  nlohmann::json out = nlohmann::json::array();
  bool wrong = false;
  std::printf("%-18s %-9s %6s %10s %8s %10s %12s\n", "impl", "operands", "size", "ms", "TFLOP/s",
              "vs cuBLAS", "max rel err");
  for (const Row& r : rows) {
    std::printf("%-18s %-9s %6d %10.3f %8.1f %9.2fx %12.2e\n", r.impl.c_str(),
                r.resident ? "resident" : "full", size, r.ms, r.tflops, rows[0].ms / r.ms, r.error);
    wrong = wrong || !(r.error < kTolerance);
    out.push_back({{"impl", r.impl},
                   {"operands", r.resident ? "resident" : "full"},
                   {"size", size},
                   {"ms_median", r.ms},
                   {"tflops", r.tflops},
                   {"vs_cublas", rows[0].ms / r.ms},
                   {"max_relative_error", r.error}});
  }
  for (const nlohmann::json& failure : failures) out.push_back(failure);
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  wrong = wrong || !failures.empty();
  if (wrong) std::fprintf(stderr, "a result is off by more than %g\n", kTolerance);
  return wrong ? 1 : 0;
}
