// A TensorView as the halide_buffer_t a kernel takes: dimensions reversed
// (Halide lists the innermost first), size-1 broadcast dimensions stretched
// with stride 0, and CUDA memory wrapped as a device allocation.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>

#include "attnforge/kernel_table.h"
#include "attnforge/tensor.h"

namespace attnforge::runtime {

class HalideTensor {
 public:
  HalideTensor() = default;
  HalideTensor(const HalideTensor&) = delete;
  HalideTensor& operator=(const HalideTensor&) = delete;
  ~HalideTensor();

  // `extents`: the extent each dimension must have (outermost first); a view
  // dimension of size 1 where more is needed broadcasts. Null: the view's own.
  // Returns a Halide error code for a CUDA wrap that fails.
  int wrap(const TensorView& view, const int64_t* extents, const KernelPackage& package);

  halide_buffer_t* get() { return &buffer_; }

 private:
  halide_buffer_t buffer_{};
  halide_dimension_t dims_[TensorView::kMaxRank]{};
  const KernelPackage* cuda_package_ = nullptr;  // set while a device pointer is wrapped
};

}  // namespace attnforge::runtime
