// A stand-in CUDA driver with one device that loads kernels and runs none:
// context, module, memory and launch calls succeed and do nothing. Enough for
// a kernel's bounds query, and for counting the device allocations of a run
// (stand_in_device_allocations) and seeing the register limit modules load
// with (stand_in_module_register_limit) and the PTX they load
// (stand_in_module_image) and the kernels launched (stand_in_launched_kernels)
// without a GPU.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace {
constexpr int kSuccess = 0;
constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED
int handle_storage;                 // what every context and module handle points at
int allocations = 0;
int allocated_bytes = 0;
int max_registers = -1;  // CU_JIT_MAX_REGISTERS of the last module load, -1 before one
uint64_t next_address = uint64_t{1} << 40;  // device addresses handed out, never reused
std::string image;                          // the PTX of the last module load
std::deque<std::string> function_names;     // a function handle points at its name
std::string launched;                       // the launched kernels' names, a line each
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
SUCCEEDS(cuMemFree_v2)
SUCCEEDS(cuMemcpyHtoD_v2)
SUCCEEDS(cuMemcpyDtoH_v2)
SUCCEEDS(cuMemcpyDtoD_v2)
SUCCEEDS(cuMemcpy3D_v2)
SUCCEEDS(cuMemcpyDtoDAsync_v2)
SUCCEEDS(cuMemcpyDtoHAsync_v2)
SUCCEEDS(cuMemcpyHtoDAsync_v2)
RETURNS_HANDLE(cuCtxCreate_v2)
RETURNS_HANDLE(cuCtxPopCurrent_v2)
RETURNS_HANDLE(cuModuleLoadData)
FAILS(cuDeviceGetName)
FAILS(cuDeviceTotalMem_v2)
FAILS(cuModuleGetGlobal_v2)
FAILS(cuPointerGetAttribute)
FAILS(cuGetErrorName)
FAILS(cuGetErrorString)

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

extern "C" int cuMemAlloc_v2(uint64_t* address, size_t bytes) {
  ++allocations;
  allocated_bytes += static_cast<int>(bytes);
  *address = next_address;
  next_address += (bytes + 255) / 256 * 256 + 256;
  return kSuccess;
}

extern "C" int cuModuleGetFunction(void** function, void*, const char* name) {
  function_names.emplace_back(name);
  *function = &function_names.back();
  return kSuccess;
}

extern "C" int cuLaunchKernel(void* function, ...) {
  launched += *static_cast<std::string*>(function) + "\n";
  return kSuccess;
}

// Records the register limit a module is loaded with (CU_JIT_MAX_REGISTERS,
// option 0), as the driver would build its kernels under it.
extern "C" int cuModuleLoadDataEx(void** module, const void* ptx, unsigned options,
                                  int* option_keys, void** option_values) {
  image = static_cast<const char*>(ptx);
  constexpr int kJitMaxRegisters = 0;
  for (unsigned n = 0; n < options; ++n) {
    if (option_keys[n] == kJitMaxRegisters) {
      max_registers = static_cast<int>(reinterpret_cast<uintptr_t>(option_values[n]));
    }
  }
  *module = &handle_storage;
  return kSuccess;
}

// For tests: the register limit of the last module loaded.
extern "C" int stand_in_module_register_limit() {
  return max_registers;
}

// For tests: the PTX of the last module loaded.
extern "C" const char* stand_in_module_image() {
  return image.c_str();
}

// For tests: the cuMemAlloc calls so far.
extern "C" int stand_in_device_allocations() {
  return allocations;
}

// For tests: the bytes cuMemAlloc was asked for so far.
extern "C" int stand_in_device_allocated_bytes() {
  return allocated_bytes;
}

// For tests: the names of the kernels launched so far, a line each.
extern "C" const char* stand_in_launched_kernels() {
  return launched.c_str();
}
