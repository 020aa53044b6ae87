// The tensors of one benchmark case: random q, k, v, the output every
// implementation writes, and the naive kernel's output it is checked against.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

#include "bench_shapes.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"
#include "spec/paged_cache.h"
#include "spec/quantized_kv.h"

namespace attnforge::bench {

// Every tensor is (d, position, head, batch) innermost first: dense (B, H, L, D).
// The f32 tensors hold values the spec's storage dtype represents exactly, so
// an f32 peer (OpenBLAS, torch in f32) reads what the kernels read.
struct BenchInputs {
  using Tensor = Halide::Runtime::Buffer<float>;

  // q, k, v uniform in [-1, 1] (rounded to the storage dtype); the default scale 1/sqrt(D).
  BenchInputs(const AttentionSpec& spec, const Shape& shape, uint32_t seed);
  BenchInputs(const BenchInputs&) = delete;  // args points into the tensors
  BenchInputs& operator=(const BenchInputs&) = delete;

  // NaN in `out` and in the kernels' output, so an output not written fails the check.
  void poison_output();
  // The kernels' output, in the storage dtype, into `out` as f32 (for f32 the same tensor).
  void read_output();

  DType dtype;
  Tensor q, k, v, out, expected;
  // What the Halide kernels read and write: the tensors above for f32, else
  // copies in the storage dtype.
  Halide::Runtime::Buffer<> kernel_q, kernel_k, kernel_v, kernel_out;
  // kv8: kernel_k and kernel_v are the int8 rows of k and v, and k and v
  // (what the peers read) the values they stand for.
  QuantizedKv quantized;
  Halide::Runtime::Buffer<float> k_scale_pages, v_scale_pages;  // paged kv8
  // Key padding: every sequence's full length. A paged spec's kernels read
  // kernel_k and kernel_v in pages at shuffled places.
  Halide::Runtime::Buffer<int32_t> key_lengths;
  Halide::Runtime::Buffer<float> alibi_slopes;  // ALiBi: the slopes of each head
  PagedCache paged;
  KernelArguments args;  // the kernel tensors and the scale, for the JIT kernels
};

}  // namespace attnforge::bench
