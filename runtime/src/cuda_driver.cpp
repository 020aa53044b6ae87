#include "cuda_driver.h"

#include <dlfcn.h>

#include "cuda_module_load.h"

namespace attnforge::runtime {

namespace {

struct Probe {
  bool available = false;
  std::string why;
};

// The driver as every install provides it (libcuda.so.1); libcuda.so, the
// name Halide's runtime looks for, exists only with the development files.
void* driver_library() {
  static void* const driver = [] {
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return handle ? handle : dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  }();
  return driver;
}

Probe probe() {
  void* driver = driver_library();
  if (!driver) return {false, "no CUDA driver (libcuda.so.1 not found)"};
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  if (!init || !count) return {false, "the CUDA driver lacks cuInit or cuDeviceGetCount"};
  int devices = 0;
  if (init(0) != 0 || count(&devices) != 0 || devices < 1) {
    return {false, "no CUDA device (the driver reports none)"};
  }
  return {true, ""};
}

}  // namespace

bool cuda_device_available(std::string* why) {
  static const Probe result = probe();
  if (why) *why = result.why;
  return result.available;
}

}  // namespace attnforge::runtime

// Replaces the Halide runtime's weak lookup, so its CUDA kernels find the
// driver by the same names the probe does.
extern "C" void* halide_cuda_get_symbol(void*, const char* name) {
  void* driver = attnforge::runtime::driver_library();
  return driver ? dlsym(driver, name) : nullptr;
}

// Replaces the Halide runtime's weak module load (compile_kernel), which
// neither links PTX functions nor takes the register limit from anywhere but
// the environment. Here with the lookup above, so one cannot be linked
// without the other.
namespace Halide::Runtime::Internal::Cuda {
void* compile_kernel(void* user_context, const char* ptx_src, int size);
void* compile_kernel(void* user_context, const char* ptx_src, int size) {
  return attnforge::runtime::load_cuda_module(user_context, ptx_src, size);
}
}  // namespace Halide::Runtime::Internal::Cuda
