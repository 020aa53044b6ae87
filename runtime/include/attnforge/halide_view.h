// TensorViews of Halide buffers, for programs that hold their tensors as
// Halide buffers (or Halide::Runtime::Buffer): the host memory, with the
// dimensions reversed to outermost first.
#pragma once

#include <HalideRuntime.h>

#include "tensor.h"

namespace attnforge {

inline TensorView view_of(const halide_buffer_t& buffer) {
  TensorView view;
  view.data = buffer.host;
  const halide_type_t type = buffer.type;
  // uint8: an fp8 cache's e4m3 codes.
  view.type = type.code == halide_type_int && type.bits == 8      ? ElementType::i8
              : type.code == halide_type_uint && type.bits == 8   ? ElementType::f8e4m3
              : type.code == halide_type_int                      ? ElementType::i32
              : type.code == halide_type_bfloat                   ? ElementType::bf16
              : type.code == halide_type_float && type.bits == 16 ? ElementType::f16
                                                                  : ElementType::f32;
  view.rank = buffer.dimensions;
  for (int n = 0; n < view.rank; ++n) {
    view.shape[view.rank - 1 - n] = buffer.dim[n].extent;
    view.strides[view.rank - 1 - n] = buffer.dim[n].stride;
  }
  return view;
}

}  // namespace attnforge
