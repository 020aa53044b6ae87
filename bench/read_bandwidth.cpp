#include "read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace attnforge::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Sums reach here so the compiler must read every element.
volatile float g_sink = 0.0f;

// Independent partial sums, so the loop is bound by loads, not by an add chain.
constexpr int kPartials = 32;

float sum_of(const float* data, size_t count) {
  float partial[kPartials] = {};
  size_t n = 0;
  for (; n + kPartials <= count; n += kPartials) {
    for (int p = 0; p < kPartials; ++p) partial[p] += data[n + p];
  }
  float sum = 0.0f;
  for (; n < count; ++n) sum += data[n];
  for (float p : partial) sum += p;
  return sum;
}

// All threads start together (spin barrier); the rate is all bytes over the
// span from the first start to the last end.
double one_pass(const float* data, size_t count, int threads) {
  std::atomic<int> ready{0};
  std::vector<Clock::time_point> starts(threads), ends(threads);
  std::vector<float> sums(threads);
  std::vector<std::thread> pool;
  const size_t share = count / threads;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      starts[t] = Clock::now();
      sums[t] = sum_of(data + t * share, share);
      ends[t] = Clock::now();
    });
  }
  for (auto& thread : pool) thread.join();
  float total = 0.0f;
  for (float s : sums) total += s;
  g_sink = total;
  const auto first = *std::min_element(starts.begin(), starts.end());
  const auto last = *std::max_element(ends.begin(), ends.end());
  const double seconds = std::chrono::duration<double>(last - first).count();
  return static_cast<double>(share * threads * sizeof(float)) / seconds * 1e-9;
}

}  // namespace

double measure_read_bandwidth(int threads, double bytes, int trials) {
  const size_t count = static_cast<size_t>(bytes / sizeof(float));
  std::unique_ptr<float[]> data(new float[count]);
  // Written first, so every page is mapped before a timed pass.
  for (size_t n = 0; n < count; ++n) data[n] = static_cast<float>(n & 7);
  double best = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    best = std::max(best, one_pass(data.get(), count, threads));
  }
  return best;
}

}  // namespace attnforge::bench
