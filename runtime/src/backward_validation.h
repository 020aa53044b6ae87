// Checks one attention_backward call: the forward call's arguments as
// attention() checks them, then the gradient's tensors and the options the
// backward pass does not take. Every error names the argument.
#pragma once

#include "attnforge/attention.h"
#include "call_validation.h"

namespace attnforge::runtime {

struct BackwardTensors {
  const TensorView &q, &k, &v, &out, &d_out, &lse, &dq, &dk, &dv;
  const TensorView* d_bias = nullptr;  // the bias's gradient, when asked for
};

Status validate_backward_call(const BackwardTensors& t, const AttentionOptions& options,
                              ValidatedCall* call);

}  // namespace attnforge::runtime
