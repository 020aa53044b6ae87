#include "cpu_features.h"

#include "attnforge/kernel_table.h"

namespace attnforge::runtime {

namespace {

uint32_t detect() {
  uint32_t bits = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports needs a literal, hence one line per feature.
  if (__builtin_cpu_supports("sse4.1")) bits |= kSse41;
  if (__builtin_cpu_supports("avx")) bits |= kAvx;
  if (__builtin_cpu_supports("avx2")) bits |= kAvx2;
  if (__builtin_cpu_supports("fma")) bits |= kFma;
  if (__builtin_cpu_supports("avx512f")) bits |= kAvx512f;
  if (__builtin_cpu_supports("avx512bw")) bits |= kAvx512bw;
  if (__builtin_cpu_supports("avx512dq")) bits |= kAvx512dq;
  if (__builtin_cpu_supports("avx512vl")) bits |= kAvx512vl;
  if (__builtin_cpu_supports("avx512cd")) bits |= kAvx512cd;
  if (__builtin_cpu_supports("avx512ifma")) bits |= kAvx512ifma;
  if (__builtin_cpu_supports("avx512vbmi")) bits |= kAvx512vbmi;
  if (__builtin_cpu_supports("avx512bf16")) bits |= kAvx512bf16;
  // Every AVX2 CPU has F16C; GCC's table has no name for it.
  if (bits & kAvx2) bits |= kF16c;
#endif
  return bits;
}

}  // namespace

uint32_t host_cpu_features() {
  static const uint32_t features = detect();
  return features;
}

}  // namespace attnforge::runtime
