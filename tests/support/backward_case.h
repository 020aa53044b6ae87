// One attention backward problem for tests: an AttentionCase's inputs, the
// forward's output and row log-sum-exp from the double reference (stored as
// a forward kernel would return them), a random output gradient, the
// backward kernel's arguments, and a comparison of its dq, dk, dv (and dBias) with
// the reference's gradients (reference/attention_backward_reference.h).
#pragma once

#include <memory>
#include <vector>

#include "attention_case.h"
#include "host_tensor.h"
#include "spec/backward_arguments.h"
#include "tests/reference/attention_backward_reference.h"

namespace attnforge::testing {

class BackwardCase {
 public:
  BackwardCase(const AttentionSpec& spec, CaseShape shape, CaseOptions options = {});

  BackwardArguments& arguments() { return args_; }

  // The forward's arguments (its spec with .lse): run a forward kernel on
  // them, then take_forward_outputs() to give the backward the kernel's out
  // and lse instead of the reference's.
  KernelArguments& forward_arguments() { return forward_.arguments(); }
  void take_forward_outputs();

  // dq, dk and dv against the reference, each within `tolerance` scaled by
  // the largest gradient of its kind (sums over many rows grow with them).
  Comparison compare() const;
  Comparison compare(Tolerance tolerance) const;

  // The kernel's gradients, [B][H or H_kv][L][D] in double.
  std::vector<double> dq() const { return dq_->values(); }
  std::vector<double> dk() const { return dk_->values(); }
  std::vector<double> dv() const { return dv_->values(); }
  // .dbias only: [B][H][Lq][Lk].
  std::vector<double> d_bias() const { return d_bias_->values(); }

 private:
  AttentionCase forward_;
  std::unique_ptr<HostTensor> out_, d_out_, lse_, dq_, dk_, dv_, d_bias_;
  reference::Gradients expected_;
  BackwardArguments args_;
};

// Gradients' tolerance per storage dtype: the forward's, and for f16 and
// bf16 also the output O rounded to the dtype, which rowsum(dO * O) reads.
Tolerance backward_tolerance_for(DType dtype);

}  // namespace attnforge::testing
