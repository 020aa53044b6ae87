#include "halide_memory.h"

#include <HalideRuntime.h>

#include <mutex>

#include "kernel_support/kernel_memory.h"

namespace attnforge {

void* kernel_memory_malloc(void*, size_t bytes) {
  return kernel_memory_allocate(bytes);
}

void kernel_memory_free_any(void* user_context, void* block) {
  if (kernel_memory_owns(block)) {
    kernel_memory_free(block);
  } else if (block) {
    halide_default_free(user_context, block);
  }
}

namespace {

bool install() {
  // The free that handles both goes in first (a block Halide's own allocator
  // gave out just before the switch is still freed right).
  halide_free_t previous_free = halide_set_custom_free(kernel_memory_free_any);
  if (previous_free != halide_default_free) {
    halide_set_custom_free(previous_free);
    return false;
  }
  halide_malloc_t previous_malloc = halide_set_custom_malloc(kernel_memory_malloc);
  if (previous_malloc != halide_default_malloc) {
    halide_set_custom_malloc(previous_malloc);
    halide_set_custom_free(previous_free);
    return false;
  }
  return true;
}

}  // namespace

bool install_kernel_memory() {
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [] { installed = install(); });
  return installed;
}

}  // namespace attnforge
