// The tensors of one benchmark case: random q, k, v, the output every
// implementation writes, and the naive kernel's output it is checked against.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>

#include "bench_shapes.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge::bench {

// Every tensor is (d, position, head, batch) innermost first: dense (B, H, L, D).
struct BenchInputs {
  using Tensor = Halide::Runtime::Buffer<float>;

  // q, k, v uniform in [-1, 1]; the default scale 1/sqrt(D).
  BenchInputs(const AttentionSpec& spec, const Shape& shape, uint32_t seed);
  BenchInputs(const BenchInputs&) = delete;  // args points into the tensors
  BenchInputs& operator=(const BenchInputs&) = delete;

  Tensor q, k, v, out, expected;
  KernelArguments args;  // q, k, v, out and scale, for the JIT kernels
};

}  // namespace attnforge::bench
