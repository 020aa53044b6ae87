#include "fma_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnforge::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Independent chains per thread: FMA latency (4-5 cycles) times the FMA ports
// (2) needs at least 10 in flight; 12 accumulators still fit in 16 registers.
constexpr int kChains = 12;
// Iterations between clock reads: ~200k FMAs, tens of microseconds.
constexpr long kIterationsPerCheck = 1 << 14;

// Results land here so the compiler must compute every chain.
volatile float g_sink = 0.0f;

struct LoopResult {
  double flops = 0.0;
  Clock::time_point start, end;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// acc = acc * a + b with a just below 1 stays finite forever. The trip count
// depends on the clock and the sums reach g_sink, so no chain can be folded.
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) LoopResult fma_loop_avx2(double seconds, float seed) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(seed + static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f);
  const __m256 b = _mm256_set1_ps(seed * 1e-6f);
  LoopResult result;
  result.start = Clock::now();
  long iterations = 0;
  do {
    for (long n = 0; n < kIterationsPerCheck; ++n) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    iterations += kIterationsPerCheck;
  } while (seconds_since(result.start) < seconds);
  result.end = Clock::now();
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  g_sink = lanes[0] + lanes[7];
  result.flops = 2.0 * 8 * kChains * static_cast<double>(iterations);
  return result;
}

__attribute__((target("avx512f"))) LoopResult fma_loop_avx512(double seconds, float seed) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(seed + static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f);
  const __m512 b = _mm512_set1_ps(seed * 1e-6f);
  LoopResult result;
  result.start = Clock::now();
  long iterations = 0;
  do {
    for (long n = 0; n < kIterationsPerCheck; ++n) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    iterations += kIterationsPerCheck;
  } while (seconds_since(result.start) < seconds);
  result.end = Clock::now();
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  g_sink = _mm512_reduce_add_ps(sum);
  result.flops = 2.0 * 16 * kChains * static_cast<double>(iterations);
  return result;
}
#endif

// Portable fallback: the compiler vectorizes what the target allows.
LoopResult fma_loop_generic(double seconds, float seed) {
  constexpr int kLanes = kChains * 4;
  float acc[kLanes];
  for (int c = 0; c < kLanes; ++c) acc[c] = seed + static_cast<float>(c);
  const float a = 0.999999f, b = seed * 1e-6f;
  LoopResult result;
  result.start = Clock::now();
  long iterations = 0;
  do {
    for (long n = 0; n < kIterationsPerCheck; ++n) {
      for (int c = 0; c < kLanes; ++c) acc[c] = acc[c] * a + b;
    }
    iterations += kIterationsPerCheck;
  } while (seconds_since(result.start) < seconds);
  result.end = Clock::now();
  float sum = 0.0f;
  for (float x : acc) sum += x;
  g_sink = sum;
  result.flops = 2.0 * kLanes * static_cast<double>(iterations);
  return result;
}

using FmaLoop = LoopResult (*)(double, float);

// All threads start together (spin barrier); the rate is their total work
// over the span from the first start to the last end.
double run_threads(FmaLoop loop, int threads, double seconds) {
  std::atomic<int> ready{0};
  std::vector<LoopResult> results(threads);
  std::vector<std::thread> pool;
  const float seed = 1.0f;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      results[t] = loop(seconds, seed + static_cast<float>(t));
    });
  }
  for (auto& thread : pool) thread.join();
  Clock::time_point first = results[0].start, last = results[0].end;
  double flops = 0.0;
  for (const auto& r : results) {
    first = std::min(first, r.start);
    last = std::max(last, r.end);
    flops += r.flops;
  }
  return flops / std::chrono::duration<double>(last - first).count() * 1e-9;
}

double best_of(FmaLoop loop, int threads, double seconds, int trials) {
  double best = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    best = std::max(best, run_threads(loop, threads, seconds));
  }
  return best;
}

}  // namespace

FmaPeak measure_fma_peak(int threads, double seconds, int trials) {
  threads = std::max(1, threads);
  trials = std::max(1, trials);
  std::vector<std::pair<const char*, FmaLoop>> loops;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    loops.emplace_back("avx2+fma", fma_loop_avx2);
  }
  if (__builtin_cpu_supports("avx512f")) loops.emplace_back("avx512f", fma_loop_avx512);
#endif
  if (loops.empty()) loops.emplace_back("generic", fma_loop_generic);
  FmaPeak peak;
  for (const auto& [isa, loop] : loops) {
    double gflops = best_of(loop, threads, seconds, trials);
    if (gflops > peak.gflops) peak = {gflops, isa};
  }
  return peak;
}

}  // namespace attnforge::bench
