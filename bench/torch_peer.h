// PyTorch's scaled_dot_product_attention as a peer, run by a Python that has
// torch (bench/torch_sdpa.py) on the case's own inputs and timed there, with
// the same timing rule; its output comes back for the benchmark's check.
#pragma once

#include <HalideBuffer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_inputs.h"
#include "bench/timing.h"
#include "spec/attention_spec.h"
#include "spec/layer_spec.h"

namespace attnforge::bench {

struct LayerInputs;

struct TorchResult {
  Timing timing;
  std::vector<float> output;  // as f32, laid out as the benchmark's own output
  std::string error;          // set when torch could not run
  std::string path;           // which of several ways the script timed, where it chose
};

// Whether `python` imports torch (asked once per path).
bool python_has_torch(const std::string& python);

// `evict_bytes` > 0: a buffer of that many bytes is written, untimed, before
// every run, as the benchmark evicts the caches for its memory-bound rows.
// A spec whose modifier has a mask rule takes `mask`, its attended pairs
// (mask_census.h): FlexAttention runs them as a block mask where it compiles
// on this CPU, else SDPA as a boolean mask.
TorchResult run_torch_sdpa(const std::string& python, const AttentionSpec& spec, const Shape& shape,
                           int threads, const BenchInputs& inputs, double min_seconds,
                           std::size_t evict_bytes = 0,
                           const Halide::Runtime::Buffer<uint8_t>* mask = nullptr);

// The same on a CUDA device with each of `backends` (default, math,
// efficient, flash, cudnn) in one torch process, f32 or f16 as the spec
// stores: q, k and v are (B, H, L, D) as f32. One result per backend.
struct TorchCudaInputs {
  const float *q, *k, *v;
  float scale;
};
std::vector<TorchResult> run_torch_sdpa_cuda(const std::string& python, const AttentionSpec& spec,
                                             const Shape& shape, const TorchCudaInputs& inputs,
                                             const std::vector<std::string>& backends,
                                             double min_seconds);

// The backward pass of PyTorch's SDPA (bench/torch_sdpa_backward.py) on the
// CPU or a CUDA device: the gradients by q, k and v of d_out, timed with the
// forward kept. Its output is dq, dk and dv one after another. Runs f32 and
// bf16 (and f16 on CUDA) with no mask or a top-left causal one.
struct TorchBackwardInputs {
  // (B, H or H_kv, L, D) dense; for a bf16 or f16 spec, values it holds exactly.
  const float *q, *k, *v, *d_out;
  float scale;
  std::string device = "cpu";  // or "cuda"
};
TorchResult run_torch_sdpa_backward(const std::string& python, const AttentionSpec& spec,
                                    const Shape& shape, int threads,
                                    const TorchBackwardInputs& inputs, double min_seconds);

// torch.nn.MultiheadAttention in eval mode (bench/torch_mha.py) on the
// inputs' self-attention layer; timed unless min_seconds is negative. Runs MHA with no mask or a
// causal one only.
TorchResult run_torch_mha(const std::string& python, const LayerSpec& spec, int batch, int len,
                          int threads, const LayerInputs& inputs, double min_seconds);

}  // namespace attnforge::bench
