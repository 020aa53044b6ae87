// A 4-D tensor in host memory for tests: storage in f32, f16, bf16, int32 or int8,
// any memory order of its dims, and the exact stored values in double for the
// reference. Dims are listed innermost first, as Halide does.
#pragma once

#include <HalideRuntime.h>

#include <array>
#include <cstdint>
#include <vector>

#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge::testing {

class HostTensor {
 public:
  using Extents = std::array<int, 4>;
  // memory_order: logical dims from innermost to outermost in memory.
  HostTensor(halide_type_t type, Extents extents, Extents memory_order = {0, 1, 2, 3});
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  // Stores `value` rounded to the storage type; returns what was stored.
  double set(const Extents& index, double value);
  double get(const Extents& index) const;

  // Values in logical row-major order: index 3 outermost, index 0 innermost.
  std::vector<double> values() const;

  halide_buffer_t* raw() { return &buffer_; }
  halide_type_t type() const { return buffer_.type; }
  const Extents& extents() const { return extents_; }

  // Make logical dim `dim` (now of extent 1) read as extent `extent` with stride 0.
  void broadcast(int dim, int extent);

 private:
  size_t offset(const Extents& index) const;

  halide_type_t type_;
  Extents extents_;
  std::vector<uint8_t> storage_;
  std::array<halide_dimension_t, 4> dims_{};
  halide_buffer_t buffer_{};
};

}  // namespace attnforge::testing
