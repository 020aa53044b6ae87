// Calls through the runtime with the stand-in CUDA driver of one device
// (tests/kernels/one_device_cuda_driver.cpp): tensors at device addresses
// that nothing reads, and what the driver recorded.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <initializer_list>

#include "attnforge/attention.h"

namespace attnforge {

inline TensorView on_device(uintptr_t address, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(reinterpret_cast<void*>(address), ElementType::f32, shape,
                                Device::cuda);
}

// What the stand-in driver's `counter` (e.g. stand_in_device_allocations)
// returns, or -1 when the driver or the counter is not loaded.
inline int stand_in_driver_record(const char* counter) {
  void* driver = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) return -1;
  auto read = reinterpret_cast<int (*)()>(dlsym(driver, counter));
  return read ? read() : -1;
}

}  // namespace attnforge
