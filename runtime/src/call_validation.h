// Checks one attention call's arguments against each other and derives the
// spec of the kernel it needs. Every error names the argument, the expected
// and the given value.
#pragma once

#include "attnforge/attention.h"
#include "spec/attention_spec.h"

namespace attnforge::runtime {

struct ValidatedCall {
  // The kernel this call needs; once one is chosen, its spec (a window given
  // per call then takes the sizes as arguments).
  AttentionSpec spec;
  int batch = 0, q_len = 0, kv_len = 0;
  float scale = 0.0f;
  Device device = Device::cpu;
  bool empty = false;  // B == 0 or Lq == 0: nothing to compute
  // The largest power of two (up to 256) in bytes that every row of q, k and
  // v starts at a multiple of: their pointers and B, H and L strides.
  int row_alignment = 1;
  std::string modifier;  // the options' modifier name: its kernels have that name and any hash
};

// The options' own checks for a call of b batches, lq queries, lk keys and
// `heads` heads whose first tensor is q (type and device).
Status check_options(const AttentionOptions& options, const TensorView& q, int64_t b, int64_t lq,
                     int64_t lk, int64_t heads);

// The mask, alignment, window, key padding, bias kind and weights the options ask for.
void apply_options(const AttentionOptions& options, AttentionSpec& spec);

Status validate_call(const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& out, const AttentionOptions& options, ValidatedCall* call);

}  // namespace attnforge::runtime
