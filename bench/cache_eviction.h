// Evicting the CPU caches between timed runs. A decoding step streams a KV
// cache that, between two steps of one layer, the other layers' caches and
// weights have pushed out; a cache near the last-level cache's size, timed
// back to back, would be partly read from it instead.
#pragma once

#include <cstddef>
#include <vector>

namespace attnforge::bench {

// The size of the last-level cache one core sees (sysfs, else the C library),
// or 64 MiB where neither tells.
std::size_t last_level_cache_bytes();

class CacheEviction {
 public:
  // Writes one byte per cache line of a buffer of `bytes` on each call.
  explicit CacheEviction(std::size_t bytes = 2 * last_level_cache_bytes());
  void operator()();
  std::size_t bytes() const { return buffer_.size(); }

 private:
  std::vector<unsigned char> buffer_;
};

}  // namespace attnforge::bench
