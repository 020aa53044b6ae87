#include "kernel_memory.h"

#include <array>
#include <cstdint>
#include <cstdlib>

namespace attnforge {

namespace {

// Blocks smaller than this come and go through the C library, which serves
// them without new mappings; larger ones are kept.
constexpr size_t kPooledBytes = size_t{64} << 10;
// What one thread keeps at most: the tiles of the largest schedules in the
// space, not the root buffers of an unfused one.
constexpr size_t kCachedBytesPerThread = size_t{8} << 20;
constexpr size_t kPage = 4096;

// A block is [header | payload | slack]: the header's last word holds the
// block's start with its low bit set (a C library pointer, as Halide's own
// allocator stores there, has it clear); the slack makes reads past the end
// safe.
struct Header {
  size_t capacity;  // payload bytes
};
constexpr size_t kHeaderBytes = kernel_memory_alignment;
constexpr uintptr_t kOwnedTag = 1;

uintptr_t& tag_word(const void* payload) {
  return reinterpret_cast<uintptr_t*>(const_cast<void*>(payload))[-1];
}

char* start_of(void* payload) {
  return reinterpret_cast<char*>(tag_word(payload) & ~kOwnedTag);
}

size_t capacity_of(void* payload) {
  return reinterpret_cast<Header*>(start_of(payload))->capacity;
}

void release(void* payload) {
  std::free(start_of(payload));
}

// Set once this thread's cache is destroyed (at thread exit), after which
// blocks go straight back to the system.
thread_local bool cache_gone = false;

class ThreadCache {
 public:
  ~ThreadCache() {
    cache_gone = true;
    for (void*& block : blocks_) {
      if (block) release(block);
    }
  }

  // The smallest kept block that holds `bytes` without wasting half of it.
  void* take(size_t bytes) {
    void** best = nullptr;
    for (void*& block : blocks_) {
      if (!block) continue;
      size_t capacity = capacity_of(block);
      if (capacity < bytes || capacity > 2 * bytes) continue;
      if (!best || capacity < capacity_of(*best)) best = &block;
    }
    if (!best) return nullptr;
    void* block = *best;
    *best = nullptr;
    bytes_ -= capacity_of(block);
    return block;
  }

  // Keeps `block` if there is room; otherwise the block goes back to the system.
  void give(void* block) {
    size_t capacity = capacity_of(block);
    if (bytes_ + capacity <= kCachedBytesPerThread) {
      for (void*& slot : blocks_) {
        if (slot) continue;
        slot = block;
        bytes_ += capacity;
        return;
      }
    }
    release(block);
  }

  size_t bytes() const { return bytes_; }

 private:
  std::array<void*, 8> blocks_{};
  size_t bytes_ = 0;
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

size_t round_up(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

}  // namespace

void* kernel_memory_allocate(size_t bytes) {
  const bool pooled = bytes >= kPooledBytes;
  if (pooled && !cache_gone) {
    if (void* block = thread_cache().take(bytes)) return block;
  }
  const size_t capacity =
      round_up(bytes == 0 ? 1 : bytes, pooled ? kPage : kernel_memory_alignment);
  void* start = std::aligned_alloc(kernel_memory_alignment,
                                   kHeaderBytes + capacity + kernel_memory_alignment);
  if (!start) return nullptr;
  reinterpret_cast<Header*>(start)->capacity = capacity;
  void* payload = static_cast<char*>(start) + kHeaderBytes;
  tag_word(payload) = reinterpret_cast<uintptr_t>(start) | kOwnedTag;
  return payload;
}

void kernel_memory_free(void* block) {
  if (!block) return;
  if (capacity_of(block) >= kPooledBytes && !cache_gone) {
    thread_cache().give(block);
  } else {
    release(block);
  }
}

bool kernel_memory_owns(const void* pointer) {
  return pointer && (tag_word(pointer) & kOwnedTag) != 0;
}

size_t kernel_memory_cached_bytes() {
  return cache_gone ? 0 : thread_cache().bytes();
}

}  // namespace attnforge
