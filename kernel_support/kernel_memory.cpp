#include "kernel_memory.h"

#include <array>
#include <cstdint>
#include <cstdlib>

namespace attnforge {

namespace {

// What one thread keeps at most: the tiles of the largest schedules in the
// space, not the root buffers of an unfused one.
constexpr size_t kCachedBytesPerThread = size_t{8} << 20;

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

// Freed blocks by size class, oldest evicted first when the bound is reached.
class ThreadCache {
 public:
  ~ThreadCache() {
    cache_gone = true;
    for (Slot& slot : slots_) {
      if (slot.block) release(slot.block);
    }
  }

  // A kept block of `capacity` bytes (a size class), or nullptr.
  void* take(size_t capacity) {
    for (Slot& slot : slots_) {
      if (!slot.block || slot.capacity != capacity) continue;
      void* block = slot.block;
      slot.block = nullptr;
      bytes_ -= capacity;
      return block;
    }
    return nullptr;
  }

  // Keeps `block`, evicting the oldest kept blocks to stay within the bound.
  void give(void* block) {
    const size_t capacity = capacity_of(block);
    if (capacity > kCachedBytesPerThread) {
      release(block);
      return;
    }
    Slot* free_slot = nullptr;
    while (!(free_slot = room_for(capacity))) evict_oldest();
    *free_slot = {block, capacity, ++clock_};
    bytes_ += capacity;
  }

  size_t bytes() const { return bytes_; }

 private:
  struct Slot {
    void* block = nullptr;
    size_t capacity = 0;  // kept here so a lookup reads no block
    uint64_t freed_at = 0;
  };

  Slot* room_for(size_t capacity) {
    if (bytes_ + capacity > kCachedBytesPerThread) return nullptr;
    for (Slot& slot : slots_) {
      if (!slot.block) return &slot;
    }
    return nullptr;
  }

  void evict_oldest() {
    Slot* oldest = nullptr;
    for (Slot& slot : slots_) {
      if (slot.block && (!oldest || slot.freed_at < oldest->freed_at)) oldest = &slot;
    }
    bytes_ -= oldest->capacity;
    release(oldest->block);
    oldest->block = nullptr;
  }

  std::array<Slot, 16> slots_{};
  size_t bytes_ = 0;
  uint64_t clock_ = 0;
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

// Size classes are powers of two from the alignment up, so a tile that grows
// a little from one call to the next (a causal mask's key range) still finds
// its block; blocks too large to keep are only rounded to the alignment.
size_t size_class(size_t bytes) {
  if (bytes > kCachedBytesPerThread) {
    return (bytes + kernel_memory_alignment - 1) / kernel_memory_alignment *
           kernel_memory_alignment;
  }
  size_t capacity = kernel_memory_alignment;
  while (capacity < bytes) capacity *= 2;
  return capacity;
}

}  // namespace

void* kernel_memory_allocate(size_t bytes) {
  const size_t capacity = size_class(bytes);
  if (!cache_gone) {
    if (void* block = thread_cache().take(capacity)) return block;
  }
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
  if (cache_gone) {
    release(block);
  } else {
    thread_cache().give(block);
  }
}

bool kernel_memory_owns(const void* pointer) {
  return pointer && (tag_word(pointer) & kOwnedTag) != 0;
}

size_t kernel_memory_cached_bytes() {
  return cache_gone ? 0 : thread_cache().bytes();
}

}  // namespace attnforge
