#include "cuda_driver.h"

#include <dlfcn.h>

namespace attnforge::runtime {

namespace {

struct Probe {
  bool available = false;
  std::string why;
};

Probe probe() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) driver = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
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
