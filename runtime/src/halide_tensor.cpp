#include "halide_tensor.h"

#include "element_types.h"

namespace attnforge::runtime {

int HalideTensor::wrap(const TensorView& view, const int64_t* extents,
                       const KernelPackage& package) {
  buffer_.type = kernel_halide_type(view.type, view.device);
  buffer_.dimensions = view.rank;
  buffer_.dim = dims_;
  for (int n = 0; n < view.rank; ++n) {
    const int outer = view.rank - 1 - n;  // Halide's dimension n is the view's outer-th
    const int64_t extent = extents ? extents[outer] : view.shape[outer];
    const bool broadcast = view.shape[outer] == 1 && extent != 1;
    dims_[n].min = 0;
    dims_[n].extent = static_cast<int32_t>(extent);
    dims_[n].stride = broadcast ? 0 : static_cast<int32_t>(view.strides[outer]);
  }
  if (view.device == Device::cpu) {
    buffer_.host = static_cast<uint8_t*>(view.data);
    return 0;
  }
  if (!package.cuda_wrap) return halide_error_code_no_device_interface;
  int error = package.cuda_wrap(&buffer_, reinterpret_cast<uint64_t>(view.data));
  if (error == 0) {
    cuda_package_ = &package;
    buffer_.flags |= halide_buffer_flag_device_dirty;  // the data lives on the device
  }
  return error;
}

HalideTensor::~HalideTensor() {
  if (cuda_package_) cuda_package_->cuda_detach(&buffer_);
}

}  // namespace attnforge::runtime
