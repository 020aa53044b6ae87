// Routes the memory Halide's runtime allocates for CPU kernels (their tiles)
// through attnforge::kernel_memory.
#pragma once

namespace attnforge::runtime {

// Installs kernel_memory as Halide's allocator once per process, unless the
// application has set an allocator of its own, which is then kept. Blocks
// the previous allocator handed out are still freed by it. Returns whether
// kernel_memory is in use.
bool install_kernel_memory();

}  // namespace attnforge::runtime
