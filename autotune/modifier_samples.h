// A modifier's tensors filled with its sample values (ModifierTensor::sample,
// else zeros) at one shape: what tuning and benchmark runs pass a kernel
// whose spec has a modifier.
#pragma once

#include <HalideBuffer.h>

#include <vector>

#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge::autotune {

class ModifierSamples {
 public:
  ModifierSamples() = default;
  // Nothing for a spec without a modifier; the modifier must be loaded.
  ModifierSamples(const AttentionSpec& spec, int batch, int q_len, int kv_len);

  // Points args' modifier tensors at these (which must outlive the call).
  void attach(KernelArguments& args);

 private:
  std::vector<Halide::Runtime::Buffer<void>> tensors_;
};

}  // namespace attnforge::autotune
