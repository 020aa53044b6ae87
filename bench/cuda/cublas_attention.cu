#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cublas_attention.h"
#include "spec/dtype_traits.h"
#include "spec/key_range.h"

namespace attnforge::bench {

namespace {

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(status));
  }
}

constexpr int kSoftmaxThreads = 256;

template <typename T>
__device__ T from_float(float x);
template <>
__device__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __half from_float<__half>(float x) {
  return __float2half(x);
}

// One block per score row: masked max, exp-sum, then P = exp(s - max) / sum.
// Keys past the row's last visible key (causal) get probability 0.
template <typename P>
__global__ void softmax_rows(const float* scores, P* probs, int q_len, int kv_len, int last_offset,
                             bool causal) {
  const long row = blockIdx.x;
  const int i = static_cast<int>(row % q_len);
  const int visible = causal ? min(kv_len, max(0, i + last_offset + 1)) : kv_len;
  const float* s = scores + row * kv_len;
  P* p = probs + row * kv_len;
  __shared__ float partial[kSoftmaxThreads];
  float m = -INFINITY;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) m = fmaxf(m, s[j]);
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  const float row_max = partial[0];
  __syncthreads();
  float sum = 0.0f;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) sum += __expf(s[j] - row_max);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = visible > 0 ? 1.0f / partial[0] : 0.0f;
  for (int j = threadIdx.x; j < kv_len; j += blockDim.x) {
    p[j] = from_float<P>(j < visible ? __expf(s[j] - row_max) * inv : 0.0f);
  }
}

}  // namespace

struct CublasAttention::Device {
  AttentionSpec spec;
  int batch, q_len, kv_len;
  float scale;
  bool half;
  size_t element;
  void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *probs = nullptr;
  float* scores = nullptr;
  cublasHandle_t handle = nullptr;

  ~Device() {
    for (void* p : {q, k, v, out, probs, static_cast<void*>(scores)}) cudaFree(p);
    if (handle) cublasDestroy(handle);
  }
};

std::string CublasAttention::unsupported(const AttentionSpec& spec) {
  if (spec.dtype == DType::bf16) return "the cuBLAS baseline runs f32 and f16";
  if (spec.mask == PositionMask::window || spec.key_padding || spec.bias != BiasKind::none ||
      spec.return_weights) {
    return "the cuBLAS baseline runs unmasked or causal attention";
  }
  return "";
}

CublasAttention::CublasAttention(const AttentionSpec& spec, int batch, int q_len, int kv_len,
                                 float scale, const void* q, const void* k, const void* v)
    : device_(new Device{spec, batch, q_len, kv_len, scale, spec.dtype == DType::f16,
                         static_cast<unsigned>(traits_of(spec.dtype).bytes)}) {
  Device& d = *device_;
  const size_t D = spec.head_dim;
  const size_t q_bytes = d.element * batch * spec.heads * q_len * D;
  const size_t kv_bytes = d.element * batch * spec.kv_heads * kv_len * D;
  const size_t score_count = size_t(batch) * spec.heads * q_len * kv_len;
  check(cudaMalloc(&d.q, q_bytes), "cudaMalloc q");
  check(cudaMalloc(&d.k, kv_bytes), "cudaMalloc k");
  check(cudaMalloc(&d.v, kv_bytes), "cudaMalloc v");
  check(cudaMalloc(&d.out, q_bytes), "cudaMalloc out");
  check(cudaMalloc(&d.scores, sizeof(float) * score_count), "cudaMalloc scores");
  check(cudaMalloc(&d.probs, d.element * score_count), "cudaMalloc probs");
  check(cudaMemcpy(d.q, q, q_bytes, cudaMemcpyHostToDevice), "copy q");
  check(cudaMemcpy(d.k, k, kv_bytes, cudaMemcpyHostToDevice), "copy k");
  check(cudaMemcpy(d.v, v, kv_bytes, cudaMemcpyHostToDevice), "copy v");
  check(cublasCreate(&d.handle), "cublasCreate");
}

CublasAttention::~CublasAttention() = default;

void CublasAttention::run() {
  Device& d = *device_;
  const AttentionSpec& s = d.spec;
  const int D = s.head_dim, group = s.heads / s.kv_heads;
  const int rows = group * d.q_len;  // queries of one key/value head
  const int batches = d.batch * s.kv_heads;
  const long long q_stride = static_cast<long long>(rows) * D, kv_stride = 1LL * d.kv_len * D;
  const long long s_stride = static_cast<long long>(rows) * d.kv_len;
  const cudaDataType io = d.half ? CUDA_R_16F : CUDA_R_32F;
  const float zero = 0.0f, one = 1.0f;
  // Row-major S = scale Q K^T is column-major S^T = K Q^T.
  check(cublasGemmStridedBatchedEx(d.handle, CUBLAS_OP_T, CUBLAS_OP_N, d.kv_len, rows, D, &d.scale,
                                   d.k, io, D, kv_stride, d.q, io, D, q_stride, &zero, d.scores,
                                   CUDA_R_32F, d.kv_len, s_stride, batches, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT),
        "scores GEMM");
  // Query i sits at key i + offset (spec/key_range.h).
  const int offset = static_cast<int>(aligned_position<long>(s, 0, d.kv_len, d.q_len));
  const bool causal = s.mask == PositionMask::causal;
  const unsigned blocks = static_cast<unsigned>(size_t(d.batch) * s.heads * d.q_len);
  if (d.half) {
    softmax_rows<<<blocks, kSoftmaxThreads>>>(d.scores, static_cast<__half*>(d.probs), d.q_len,
                                              d.kv_len, offset, causal);
  } else {
    softmax_rows<<<blocks, kSoftmaxThreads>>>(d.scores, static_cast<float*>(d.probs), d.q_len,
                                              d.kv_len, offset, causal);
  }
  check(cudaGetLastError(), "softmax kernel");
  // Row-major O = P V is column-major O^T = V^T P^T.
  check(
      cublasGemmStridedBatchedEx(d.handle, CUBLAS_OP_N, CUBLAS_OP_N, D, rows, d.kv_len, &one, d.v,
                                 io, D, kv_stride, d.probs, io, d.kv_len, s_stride, &zero, d.out,
                                 io, D, q_stride, batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "P.V GEMM");
  check(cudaDeviceSynchronize(), "cuBLAS attention");
}

std::vector<float> CublasAttention::output() const {
  const Device& d = *device_;
  const size_t count = size_t(d.batch) * d.spec.heads * d.q_len * d.spec.head_dim;
  std::vector<float> values(count);
  if (d.half) {
    std::vector<__half> halves(count);
    check(cudaMemcpy(halves.data(), d.out, count * 2, cudaMemcpyDeviceToHost), "copy out");
    for (size_t n = 0; n < count; ++n) values[n] = __half2float(halves[n]);
  } else {
    check(cudaMemcpy(values.data(), d.out, count * 4, cudaMemcpyDeviceToHost), "copy out");
  }
  return values;
}

}  // namespace attnforge::bench
