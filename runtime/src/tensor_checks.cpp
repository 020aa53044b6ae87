#include "tensor_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace attnforge::runtime {

namespace {

std::string strides_text(const TensorView& t) {
  std::string text = "[";
  for (int n = 0; n < t.rank; ++n) text += fmt::format("{}{}", n ? ", " : "", t.strides[n]);
  return text + "]";
}

// The offset, in elements, of a view's last element, from extents and
// strides already checked to be in 0..kMaxIndex: each term is below 2^62, and
// the sum stops growing past kMaxIndex, so nothing overflows.
int64_t last_offset(const TensorView& t) {
  int64_t span = 0;
  for (int n = 0; n < t.rank; ++n) {
    if (t.shape[n] > 0 && span <= kMaxIndex) span += (t.shape[n] - 1) * t.strides[n];
  }
  return span;
}

// The first and last byte a non-empty view checked by check_layout touches.
struct ByteSpan {
  uintptr_t first, last;
};
ByteSpan byte_span(const TensorView& t) {
  const int64_t span = last_offset(t);
  auto first = reinterpret_cast<uintptr_t>(t.data);
  return {first, first + static_cast<uintptr_t>((span + 1) * element_bytes(t.type)) - 1};
}

// Whether two indices of t may reach one element: with dimensions in stride
// order, each stride must pass the furthest offset of those inside it.
bool elements_may_alias(const TensorView& t) {
  std::pair<int64_t, int64_t> dims[TensorView::kMaxRank];  // stride, extent; no allocation per call
  int count = 0;
  for (int n = 0; n < t.rank; ++n) {
    if (t.shape[n] > 1) dims[count++] = {t.strides[n], t.shape[n]};
  }
  std::sort(dims, dims + count);
  int64_t reach = 0;
  for (int n = 0; n < count; ++n) {
    if (dims[n].first <= reach) return true;
    reach += (dims[n].second - 1) * dims[n].first;
  }
  return false;
}

}  // namespace

Status invalid(std::string message) {
  return {ErrorCode::invalid_argument, std::move(message)};
}

std::string shape_text(const TensorView& t) {
  std::string text = "[";
  for (int n = 0; n < t.rank; ++n) text += fmt::format("{}{}", n ? ", " : "", t.shape[n]);
  return text + "]";
}

// Rank, extents, strides and span of one tensor on its own.
Status check_layout(const TensorView& t, const char* name, int rank, const char* expected) {
  if (t.rank < 0 && -t.rank <= TensorView::kMaxRank) {
    return invalid(fmt::format(
        "{}: {} extents but a different number of strides; expected rank {} {} with one "
        "stride per dimension",
        name, -t.rank, rank, expected));
  }
  if (t.rank != rank) {
    return invalid(fmt::format("{}: expected rank {} {}, got rank {}", name, rank, expected,
                               t.rank < 0 ? -t.rank : t.rank));
  }
  bool empty = false;
  for (int n = 0; n < rank; ++n) {
    if (t.shape[n] < 0 || t.shape[n] > kMaxIndex) {
      return invalid(fmt::format("{}: dimension {} of shape {} is {}; expected 0..{}", name, n,
                                 shape_text(t), t.shape[n], kMaxIndex));
    }
    if (t.strides[n] < 0 || t.strides[n] > kMaxIndex) {
      return invalid(fmt::format("{}: stride {} is {}; expected 0..{} elements", name, n,
                                 t.strides[n], kMaxIndex));
    }
    empty = empty || t.shape[n] == 0;
  }
  const int64_t span = last_offset(t);
  if (t.strides[rank - 1] != 1 && t.shape[rank - 1] > 1) {
    return invalid(
        fmt::format("{}: the innermost stride must be 1, got {}", name, t.strides[rank - 1]));
  }
  // Halide limits a buffer to 2^31 - 1 bytes (without its large_buffers feature).
  if (!empty && (span > kMaxIndex || (span + 1) * element_bytes(t.type) > kMaxIndex)) {
    return invalid(
        fmt::format("{}: shape {} with strides {} spans more than {} bytes, the most "
                    "kernels address",
                    name, shape_text(t), strides_text(t), kMaxIndex));
  }
  if (t.data == nullptr && !empty) return invalid(fmt::format("{}: data is null", name));
  return Status::success();
}

bool is_empty(const TensorView& t) {
  for (int n = 0; n < t.rank; ++n) {
    if (t.shape[n] == 0) return true;
  }
  return false;
}

// A tensor the kernel writes: each element once, and apart from the first
// `count` of `read` (threads write while others read).
Status check_written(const TensorView& t, const char* name, const NamedView* read, size_t count) {
  if (is_empty(t)) return Status::success();
  if (elements_may_alias(t)) {
    return invalid(fmt::format(
        "{}: shape {} with strides {} maps several elements to one address; an output needs "
        "its own memory for each element",
        name, shape_text(t), strides_text(t)));
  }
  const ByteSpan written = byte_span(t);
  for (const NamedView* other = read; other != read + count; ++other) {
    if (!other->view || is_empty(*other->view)) continue;
    const ByteSpan span = byte_span(*other->view);
    if (written.first <= span.last && span.first <= written.last) {
      return invalid(
          fmt::format("{}: its memory overlaps {}; outputs may not share memory "
                      "with the inputs or with each other",
                      name, other->name));
    }
  }
  return Status::success();
}

Status check_type(const TensorView& t, const char* name, ElementType expected) {
  if (t.type != expected) {
    return invalid(fmt::format("{}: expected element type {}, got {}", name, to_string(expected),
                               to_string(t.type)));
  }
  return Status::success();
}

Status check_device(const TensorView& t, const char* name, Device expected, const char* first) {
  if (t.device != expected) {
    return invalid(fmt::format("{}: on {}, but {} is on {}; every tensor must be on one device",
                               name, to_string(t.device), first, to_string(expected)));
  }
  return Status::success();
}

// Each dimension equal to `expected`, or 1 where `broadcast_ok` allows it.
Status check_shape(const TensorView& t, const char* name, const int64_t (&expected)[4],
                   const char* expected_text, const bool (&broadcast_ok)[4]) {
  for (int n = 0; n < t.rank; ++n) {
    if (t.shape[n] != expected[n] && !(broadcast_ok[n] && t.shape[n] == 1)) {
      return invalid(fmt::format("{}: expected shape {} = [{}, {}, {}, {}], got {}", name,
                                 expected_text, expected[0], expected[1], expected[2], expected[3],
                                 shape_text(t)));
    }
  }
  return Status::success();
}

Status check_extents(const TensorView& t, const char* name, std::initializer_list<int64_t> expected,
                     const char* expected_text) {
  int n = 0;
  bool same = true;
  std::string wanted = "[";
  for (int64_t extent : expected) {
    same = same && t.shape[n] == extent;
    wanted += fmt::format("{}{}", n++ ? ", " : "", extent);
  }
  if (same) return Status::success();
  return invalid(fmt::format("{}: expected shape {} = {}], got {}", name, expected_text, wanted,
                             shape_text(t)));
}

}  // namespace attnforge::runtime
