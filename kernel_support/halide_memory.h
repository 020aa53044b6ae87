// Routes the memory Halide's runtime allocates for CPU kernels (their tiles)
// through attnforge::kernel_memory.
#pragma once

#include <cstddef>

namespace attnforge {

// Halide allocator hooks over kernel_memory. The free hook also frees blocks
// of Halide's default allocator, so hooks and default can be switched while
// no kernel runs.
void* kernel_memory_malloc(void* user_context, size_t bytes);
void kernel_memory_free_any(void* user_context, void* block);

// Installs kernel_memory as Halide's allocator once per process, unless the
// application has set an allocator of its own, which is then kept. Blocks
// the previous allocator handed out are still freed by it. Returns whether
// kernel_memory is in use.
bool install_kernel_memory();

}  // namespace attnforge
