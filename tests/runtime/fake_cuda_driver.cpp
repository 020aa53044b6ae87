// A stand-in CUDA driver, installed only as libcuda.so.1 (as a driver
// install provides it): it loads, and every call reports that there is no
// device (CUDA_ERROR_NO_DEVICE).
constexpr int NO_DEVICE = 100;

#define STUB(name)        \
  extern "C" int name() { \
    return NO_DEVICE;     \
  }

STUB(cuInit)
STUB(cuDeviceGet)
STUB(cuDeviceGetAttribute)
STUB(cuDeviceGetName)
STUB(cuDeviceTotalMem_v2)
STUB(cuCtxCreate_v2)
STUB(cuCtxDestroy_v2)
STUB(cuProfilerStop)
STUB(cuCtxGetApiVersion)
STUB(cuModuleLoadData)
STUB(cuModuleUnload)
STUB(cuModuleGetFunction)
STUB(cuModuleGetGlobal_v2)
STUB(cuMemAlloc_v2)
STUB(cuMemFree_v2)
STUB(cuMemcpyHtoD_v2)
STUB(cuMemcpyDtoH_v2)
STUB(cuMemcpyDtoD_v2)
STUB(cuMemcpy3D_v2)
STUB(cuLaunchKernel)
STUB(cuCtxSynchronize)
STUB(cuCtxPushCurrent_v2)
STUB(cuCtxPopCurrent_v2)
STUB(cuPointerGetAttribute)
STUB(cuStreamSynchronize)
STUB(cuGetErrorName)
STUB(cuGetErrorString)
STUB(cuMemcpyDtoDAsync_v2)
STUB(cuMemcpyDtoHAsync_v2)
STUB(cuMemcpyHtoDAsync_v2)
STUB(cuModuleLoadDataEx)
STUB(cuCtxGetDevice)

extern "C" int cuDeviceGetCount(int* count) {
  *count = 0;
  return NO_DEVICE;
}
