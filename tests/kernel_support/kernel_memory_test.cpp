// The per-thread block cache kernels allocate their tiles from: aligned,
// writable blocks; freed blocks come back on the same thread, within a bound;
// blocks of other allocators are told apart.
#include "kernel_support/kernel_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace attnforge {
namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

TEST(KernelMemory, BlocksAreAlignedWritableAndOwned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, 64 * kKiB, 3 * kMiB + 5}) {
    void* block = kernel_memory_allocate(bytes);
    ASSERT_NE(block, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % kernel_memory_alignment, 0u) << bytes;
    EXPECT_TRUE(kernel_memory_owns(block)) << bytes;
    std::memset(block, 0x5a, bytes);
    kernel_memory_free(block);
  }
  kernel_memory_free(nullptr);
}

TEST(KernelMemory, AFreedLargeBlockIsReusedOnTheSameThread) {
  const size_t kept = kernel_memory_cached_bytes();  // other tests' blocks
  void* first = kernel_memory_allocate(512 * kKiB);
  kernel_memory_free(first);
  EXPECT_EQ(kernel_memory_cached_bytes(), kept + 512 * kKiB);
  void* second = kernel_memory_allocate(500 * kKiB);
  EXPECT_EQ(second, first);
  EXPECT_EQ(kernel_memory_cached_bytes(), kept);
  kernel_memory_free(second);
}

TEST(KernelMemory, SmallBlocksAreReusedToo) {
  void* first = kernel_memory_allocate(64);
  kernel_memory_free(first);
  void* second = kernel_memory_allocate(100);
  EXPECT_EQ(second, first);
  kernel_memory_free(second);
}

TEST(KernelMemory, ASlightlyLargerRequestFindsTheBlock) {
  // A causal tile's key range grows by a few keys from one tile to the next.
  void* first = kernel_memory_allocate(100 * kKiB);
  kernel_memory_free(first);
  void* second = kernel_memory_allocate(110 * kKiB);
  EXPECT_EQ(second, first);
  kernel_memory_free(second);
}

TEST(KernelMemory, TheOldestBlocksMakeRoomForNewOnes) {
  void* blocks[3];
  for (void*& block : blocks) block = kernel_memory_allocate(3 * kMiB);
  for (void* block : blocks) kernel_memory_free(block);  // the first is evicted
  void* kept[2] = {kernel_memory_allocate(3 * kMiB), kernel_memory_allocate(3 * kMiB)};
  EXPECT_TRUE((kept[0] == blocks[1] && kept[1] == blocks[2]) ||
              (kept[0] == blocks[2] && kept[1] == blocks[1]));
  for (void* block : kept) kernel_memory_free(block);
}

TEST(KernelMemory, AMuchLargerBlockIsNotHandedOut) {
  void* large = kernel_memory_allocate(2 * kMiB);
  kernel_memory_free(large);
  void* quarter = kernel_memory_allocate(512 * kKiB);  // would waste three quarters
  EXPECT_NE(quarter, large);
  kernel_memory_free(quarter);
}

TEST(KernelMemory, WhatAThreadKeepsIsBounded) {
  std::vector<void*> blocks;
  for (int n = 0; n < 20; ++n) blocks.push_back(kernel_memory_allocate(3 * kMiB));
  for (void* block : blocks) kernel_memory_free(block);
  EXPECT_GT(kernel_memory_cached_bytes(), 0u);
  EXPECT_LE(kernel_memory_cached_bytes(), 8 * kMiB);
}

TEST(KernelMemory, ABlockMayBeFreedOnAnotherThread) {
  void* block = kernel_memory_allocate(kMiB);
  std::thread([block] {
    kernel_memory_free(block);
    EXPECT_GE(kernel_memory_cached_bytes(), kMiB);
  }).join();  // the thread's cache releases the block as it exits
}

TEST(KernelMemory, BlocksOfHalidesDefaultAllocatorAreNotOwned) {
  // Halide's default allocator stores the C library's pointer just before
  // the block it returns.
  std::vector<uintptr_t> words(4);
  words[1] = reinterpret_cast<uintptr_t>(words.data());
  EXPECT_FALSE(kernel_memory_owns(&words[2]));
  EXPECT_FALSE(kernel_memory_owns(nullptr));
}

}  // namespace
}  // namespace attnforge
