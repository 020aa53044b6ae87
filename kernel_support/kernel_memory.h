// Memory for the buffers a CPU kernel allocates while it runs. The fused and
// online schedules allocate their tiles (from 64 bytes to a few hundred KB)
// once per query tile. From the C library a large block can be a fresh
// mapping whose pages fault in again on every tile, which can cost a kernel a
// quarter of its time, and even small aligned blocks cost a few percent.
// Here each thread keeps its recently freed blocks and hands them back, so a
// tile's memory is mapped once per thread. The AOT runtime and JIT calls (the
// tuner, the benchmarks) use the same allocator, so what is tuned is what
// ships.
#pragma once

#include <cstddef>

namespace attnforge {

// Blocks are aligned to kernel_memory_alignment bytes, and the bytes just
// before and after a block may be read (as Halide requires).
constexpr size_t kernel_memory_alignment = 128;

// nullptr when the system is out of memory.
void* kernel_memory_allocate(size_t bytes);
// Takes nullptr, or a block of kernel_memory_allocate from any thread.
void kernel_memory_free(void* block);

// Whether `pointer`, a block of some Halide allocator, came from
// kernel_memory_allocate. Reads only the 8 bytes before it.
bool kernel_memory_owns(const void* pointer);

// Bytes this thread keeps for reuse (bounded; for tests).
size_t kernel_memory_cached_bytes();

}  // namespace attnforge
