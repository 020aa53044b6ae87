// A stand-in CUDA driver with one device that loads kernels and runs none:
// context and module calls succeed, memory and launches fail. Enough for a
// kernel's bounds query, which returns before it touches the device.
#include <cstdint>

namespace {
constexpr int kSuccess = 0;
constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED
int handle_storage;                 // what every context and module handle points at
}  // namespace

#define SUCCEEDS(name)    \
  extern "C" int name() { \
    return kSuccess;      \
  }
#define FAILS(name)       \
  extern "C" int name() { \
    return kNotSupported; \
  }
#define RETURNS_HANDLE(name)                \
  extern "C" int name(void** handle, ...) { \
    *handle = &handle_storage;              \
    return kSuccess;                        \
  }

SUCCEEDS(cuInit)
SUCCEEDS(cuCtxDestroy_v2)
SUCCEEDS(cuProfilerStop)
SUCCEEDS(cuModuleUnload)
SUCCEEDS(cuCtxSynchronize)
SUCCEEDS(cuCtxPushCurrent_v2)
SUCCEEDS(cuStreamSynchronize)
RETURNS_HANDLE(cuCtxCreate_v2)
RETURNS_HANDLE(cuCtxPopCurrent_v2)
RETURNS_HANDLE(cuModuleLoadData)
RETURNS_HANDLE(cuModuleLoadDataEx)
RETURNS_HANDLE(cuModuleGetFunction)
FAILS(cuDeviceGetName)
FAILS(cuDeviceTotalMem_v2)
FAILS(cuModuleGetGlobal_v2)
FAILS(cuMemAlloc_v2)
FAILS(cuMemFree_v2)
FAILS(cuMemcpyHtoD_v2)
FAILS(cuMemcpyDtoH_v2)
FAILS(cuMemcpyDtoD_v2)
FAILS(cuMemcpy3D_v2)
FAILS(cuLaunchKernel)
FAILS(cuPointerGetAttribute)
FAILS(cuGetErrorName)
FAILS(cuGetErrorString)
FAILS(cuMemcpyDtoDAsync_v2)
FAILS(cuMemcpyDtoHAsync_v2)
FAILS(cuMemcpyHtoDAsync_v2)

extern "C" int cuDeviceGetCount(int* count) {
  *count = 1;
  return kSuccess;
}
extern "C" int cuDeviceGet(int* device, int) {
  *device = 0;
  return kSuccess;
}
extern "C" int cuCtxGetDevice(int* device) {
  *device = 0;
  return kSuccess;
}
extern "C" int cuDeviceGetAttribute(int* value, int, int) {
  *value = 0;
  return kSuccess;
}
extern "C" int cuCtxGetApiVersion(void*, unsigned* version) {
  *version = 12000;
  return kSuccess;
}
