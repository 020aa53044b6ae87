// The tensors one tuning measurement runs on: deterministic random inputs for
// any spec (every mask, bias, dtype) at one shape, and the output read back
// as f32 for the checker.
#pragma once

#include <HalideBuffer.h>

#include <cstdint>
#include <vector>

#include "modifier_samples.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"
#include "spec/paged_cache.h"
#include "spec/quantized_kv.h"

namespace attnforge::autotune {

struct TuningShape {
  int batch = 1;
  int q_len = 1;
  int kv_len = 1;
};

class TuningInputs {
 public:
  // The same seed gives the same inputs in every process.
  TuningInputs(const AttentionSpec& spec, TuningShape shape, uint32_t seed);
  TuningInputs(const TuningInputs&) = delete;  // arguments() points into the buffers
  TuningInputs& operator=(const TuningInputs&) = delete;

  KernelArguments& arguments() { return args_; }

  // The output, converted to f32 (copied back from a GPU first);
  // NaN-filled before each kernel run by clear_output().
  std::vector<float> output();
  void clear_output();

  // One of q, k, v or out (dense, host side) as f32.
  std::vector<float> as_f32(const halide_buffer_t* tensor) const;

 private:
  using Tensor = Halide::Runtime::Buffer<void>;
  Tensor make(int x0, int x1, int x2, int x3);
  void fill(Tensor& tensor, float low, float high, uint32_t seed);

  AttentionSpec spec_;
  Tensor q_, k_, v_, out_, bias_, key_lengths_, slopes_;
  QuantizedKv quantized_;  // kv8 specs: k and v as int8 rows and their scales
  PagedCache paged_;       // paged specs: k and v in pages
  Halide::Runtime::Buffer<float> k_scale_pages_, v_scale_pages_;  // paged kv8 specs
  ModifierSamples modifier_samples_;  // a modifier's tensors, its sample values
  KernelArguments args_;
};

}  // namespace attnforge::autotune
