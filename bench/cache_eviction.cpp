#include "cache_eviction.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace attnforge::bench {

std::size_t last_level_cache_bytes() {
  // sysfs first: in some VMs sysconf reports the whole package's L3 (all
  // its core complexes) where a core sees one slice.
  for (const char* index : {"index3", "index2"}) {
    std::ifstream file(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    std::size_t kib = 0;
    std::string unit;
    if (file >> kib >> unit && kib > 0 && unit == "K") return kib << 10;
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return static_cast<std::size_t>(l3);
#endif
  return std::size_t{64} << 20;
}

CacheEviction::CacheEviction(std::size_t bytes) : buffer_(bytes, 0) {}

void CacheEviction::operator()() {
  constexpr std::size_t kLine = 64;
  // volatile: the writes must reach memory although nothing reads them.
  volatile unsigned char* data = buffer_.data();
  for (std::size_t i = 0; i < buffer_.size(); i += kLine) data[i] = data[i] + 1;
}

}  // namespace attnforge::bench
