#include "attnforge/tensor.h"

#include "attnforge/status.h"

namespace attnforge {

const char* to_string(Device device) {
  return device == Device::cuda ? "cuda" : "cpu";
}

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok:
      return "ok";
    case ErrorCode::invalid_argument:
      return "invalid argument";
    case ErrorCode::no_kernel:
      return "no kernel";
    case ErrorCode::no_device:
      return "no device";
    case ErrorCode::kernel_failed:
      return "kernel failed";
  }
  return "unknown";
}

TensorView TensorView::strided(void* data, ElementType type, std::initializer_list<int64_t> shape,
                               std::initializer_list<int64_t> strides, Device device) {
  TensorView view;
  view.data = data;
  view.type = type;
  view.device = device;
  // More dimensions than kMaxRank, or strides that do not match, leave a
  // rank that validation reports instead of writing past the arrays.
  view.rank = shape.size() <= kMaxRank && strides.size() == shape.size()
                  ? static_cast<int>(shape.size())
                  : -static_cast<int>(shape.size());
  if (view.rank < 0) return view;
  int n = 0;
  for (int64_t extent : shape) view.shape[n++] = extent;
  n = 0;
  for (int64_t stride : strides) view.strides[n++] = stride;
  return view;
}

TensorView TensorView::contiguous(void* data, ElementType type,
                                  std::initializer_list<int64_t> shape, Device device) {
  TensorView view = strided(data, type, shape, shape, device);
  if (view.rank <= 0) return view;
  int64_t stride = 1;
  for (int n = view.rank - 1; n >= 0; --n) {
    view.strides[n] = stride;
    stride *= view.shape[n];
  }
  return view;
}

}  // namespace attnforge
