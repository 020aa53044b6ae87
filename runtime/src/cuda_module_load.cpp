#include "cuda_module_load.h"

#include <HalideRuntime.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "kernel_support/ptx_functions.h"
#include "spec/cuda_register_limit.h"

// The driver lookup, cuda_driver.cpp's replacement of the Halide runtime's.
extern "C" void* halide_cuda_get_symbol(void* user_context, const char* name);

namespace attnforge::runtime {

void* load_cuda_module(void* user_context, const char* ptx, int size) {
  using LoadDataEx =
      int (*)(void** module, const void* image, unsigned options, int* keys, void** values);
  auto load =
      reinterpret_cast<LoadDataEx>(halide_cuda_get_symbol(user_context, "cuModuleLoadDataEx"));
  if (!load) {
    halide_error(user_context, "CUDA: the driver has no cuModuleLoadDataEx\n");
    return nullptr;
  }
  std::string linked;
  try {
    linked = link_ptx_functions(std::string(ptx, strnlen(ptx, static_cast<size_t>(size))));
  } catch (const std::exception& error) {
    halide_error(user_context, (std::string("CUDA: ") + error.what() + "\n").c_str());
    return nullptr;
  }
  constexpr int kJitMaxRegisters = 0;  // CU_JIT_MAX_REGISTERS
  int keys[] = {kJitMaxRegisters};
  void* values[] = {reinterpret_cast<void*>(static_cast<uintptr_t>(kCudaRegisterLimit))};
  void* module = nullptr;
  const int status = load(&module, linked.c_str(), 1, keys, values);
  if (status != 0) {
    halide_error(
        user_context,
        ("CUDA: cuModuleLoadDataEx failed with error " + std::to_string(status) + "\n").c_str());
    return nullptr;
  }
  return module;
}

}  // namespace attnforge::runtime
