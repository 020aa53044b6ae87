// Checks of single tensors that every call's validation shares: layout,
// element type, device, shape, and outputs that must not overlap what is
// read. Every error names the argument, the expected and the given value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "attnforge/status.h"
#include "attnforge/tensor.h"

namespace attnforge::runtime {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();  // kernels index in int32

#define ATTNFORGE_CHECK(expression)    \
  do {                                 \
    Status status_ = (expression);     \
    if (!status_.ok()) return status_; \
  } while (0)

Status invalid(std::string message);

// "[2, 3, 4]"
std::string shape_text(const TensorView& t);

// Rank, extents, strides and span of one tensor on its own; `expected`
// describes the shape, e.g. "[B, H, Lq, D]".
Status check_layout(const TensorView& t, const char* name, int rank, const char* expected);

bool is_empty(const TensorView& t);

struct NamedView {
  const TensorView* view;  // null: not given
  const char* name;
};

// A tensor the kernel writes: each element once, and apart from the first
// `count` of `read` (threads write while others read).
Status check_written(const TensorView& t, const char* name, const NamedView* read, size_t count);

// A call's outputs: lse (null: none) apart from the inputs, weights (null:
// none) apart from those and lse, and out apart from all of them.
template <size_t N>
Status check_outputs(const TensorView& out, const TensorView* weights, const NamedView (&inputs)[N],
                     const TensorView* lse = nullptr) {
  NamedView read[N + 2];
  for (size_t n = 0; n < N; ++n) read[n] = inputs[n];
  read[N] = {lse, "lse"};
  read[N + 1] = {weights, "weights"};
  if (lse) {
    Status status = check_written(*lse, "lse", read, N);
    if (!status.ok()) return status;
  }
  if (weights) {
    Status status = check_written(*weights, "weights", read, N + 1);
    if (!status.ok()) return status;
  }
  return check_written(out, "out", read, N + 2);
}

Status check_type(const TensorView& t, const char* name, ElementType expected);

// `expected` is the device of the call's first tensor, named `first`.
Status check_device(const TensorView& t, const char* name, Device expected,
                    const char* first = "q");

// Each dimension equal to `expected`, or 1 where `broadcast_ok` allows it (rank 4).
Status check_shape(const TensorView& t, const char* name, const int64_t (&expected)[4],
                   const char* expected_text, const bool (&broadcast_ok)[4] = {});

// Each dimension equal to `expected` (any rank, as checked by check_layout).
Status check_extents(const TensorView& t, const char* name, std::initializer_list<int64_t> expected,
                     const char* expected_text);

}  // namespace attnforge::runtime
