// TensorViews over the buffers of a test case, and the runtime options that
// match its spec, so the runtime computes exactly what the case's reference does.
#pragma once

#include <HalideRuntime.h>

#include <vector>

#include "attnforge/attention.h"
#include "attnforge/halide_view.h"
#include "spec/attention_spec.h"
#include "tests/support/attention_case.h"
#include "tests/support/backward_case.h"

namespace attnforge::testing {

// The options whose mask, alignment and window ask for the spec's.
AttentionOptions mask_options(const AttentionSpec& spec);

// Views of a case's tensors and the options for its spec; the case must
// outlive it. Not copyable: the options point into it.
struct RuntimeCall {
  RuntimeCall(const AttentionSpec& spec, AttentionCase& c);
  RuntimeCall(const AttentionSpec& spec, KernelArguments& args);
  RuntimeCall(const RuntimeCall&) = delete;
  RuntimeCall& operator=(const RuntimeCall&) = delete;

  TensorView q, k, v, out;
  TensorView key_lengths, page_table, bias, alibi_slopes, weights, lse, k_scale, v_scale;
  AttentionOptions options;

  Status run() { return attention(q, k, v, out, options); }
};

// Views of a backward case's tensors and the forward options of its spec.
struct BackwardRuntimeCall {
  BackwardRuntimeCall(const AttentionSpec& spec, BackwardCase& c);
  BackwardRuntimeCall(const BackwardRuntimeCall&) = delete;
  BackwardRuntimeCall& operator=(const BackwardRuntimeCall&) = delete;

  TensorView q, k, v, out, d_out, lse, dq, dk, dv;
  TensorView key_lengths, bias, alibi_slopes;
  AttentionOptions options;
  TensorView d_bias;
  const TensorView* d_bias_given = nullptr;  // &d_bias for a .dbias case

  Status run() {
    return attention_backward(q, k, v, out, d_out, lse, dq, dk, dv, options, d_bias_given);
  }
};

// A causal GQA call (8 query heads over 2, D 64) whose tensors say they are
// on a CUDA device, for the runtime's answers where there is none.
struct CudaCausalCall {
  CudaCausalCall();
  CudaCausalCall(const CudaCausalCall&) = delete;
  CudaCausalCall& operator=(const CudaCausalCall&) = delete;

  std::vector<float> q_data, kv_data, out_data;
  TensorView q, kv, out;
  AttentionOptions options;
};

}  // namespace attnforge::testing
