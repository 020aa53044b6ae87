#include "read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
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

// All threads start together (spin barrier), each reading `bytes` / threads
// with read_share(t); the rate is all bytes over the span from the first
// start to the last end.
double one_pass(double bytes, int threads, const std::function<float(int)>& read_share) {
  std::atomic<int> ready{0};
  std::vector<Clock::time_point> starts(threads), ends(threads);
  std::vector<float> sums(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      starts[t] = Clock::now();
      sums[t] = read_share(t);
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
  return bytes / seconds * 1e-9;
}

// `count` floats, written first so that every page is mapped before a timed pass.
std::unique_ptr<float[]> mapped_floats(size_t count) {
  std::unique_ptr<float[]> data(new float[count]);
  for (size_t n = 0; n < count; ++n) data[n] = static_cast<float>(n & 7);
  return data;
}

}  // namespace

float sum_of_pieces(const float* share, const std::vector<uint32_t>& order, size_t piece_floats) {
  constexpr size_t kLineFloats = 16, kPrefetchFloats = 8192 / sizeof(float);
  float partial[kLineFloats] = {};
  size_t ahead_piece = kPrefetchFloats / piece_floats, ahead_at = kPrefetchFloats % piece_floats;
  for (uint32_t piece : order) {
    const float* data = share + piece * piece_floats;
    for (size_t at = 0; at < piece_floats; at += kLineFloats) {
      if (ahead_piece < order.size()) {
        __builtin_prefetch(share + order[ahead_piece] * piece_floats + ahead_at);
        ahead_at += kLineFloats;
        if (ahead_at == piece_floats) ahead_at = 0, ++ahead_piece;
      }
      for (size_t p = 0; p < kLineFloats; ++p) partial[p] += data[at + p];
    }
  }
  float sum = 0.0f;
  for (float p : partial) sum += p;
  return sum;
}

double measure_read_bandwidth(int threads, double bytes, int trials) {
  const size_t share = static_cast<size_t>(bytes / sizeof(float)) / threads;
  const std::unique_ptr<float[]> data = mapped_floats(share * threads);
  const double read = static_cast<double>(share * threads * sizeof(float));
  double best = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    best = std::max(best, one_pass(read, threads,
                                   [&](int t) { return sum_of(data.get() + t * share, share); }));
  }
  return best;
}

ReadProbe::ReadProbe(double bytes)
    : floats_(static_cast<size_t>(bytes / sizeof(float))),
      bytes_(static_cast<double>(floats_ * sizeof(float))),
      data_(mapped_floats(floats_).release()) {}

ReadProbe::~ReadProbe() {
  delete[] data_;
}

void ReadProbe::run(int threads) const {
  const size_t share = floats_ / threads;
  one_pass(bytes_, threads, [&](int t) { return sum_of(data_ + t * share, share); });
}

PieceReadBandwidth measure_piece_read_bandwidth(int threads, int piece_bytes, double bytes,
                                                int trials) {
  constexpr size_t kLineFloats = 16;  // whole lines: sum_of_pieces reads and prefetches by line
  const size_t piece = std::max(
      kLineFloats, (piece_bytes / sizeof(float) + kLineFloats - 1) / kLineFloats * kLineFloats);
  const size_t pieces = static_cast<size_t>(bytes / (piece * sizeof(float))) / threads;
  const std::unique_ptr<float[]> data = mapped_floats(pieces * piece * threads);
  const double read = static_cast<double>(pieces * piece * threads * sizeof(float));
  std::vector<uint32_t> in_order(pieces), shuffled(pieces);
  std::iota(in_order.begin(), in_order.end(), 0);
  shuffled = in_order;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(1));
  auto pass = [&](const std::vector<uint32_t>& order) {
    return one_pass(read, threads, [&](int t) {
      return sum_of_pieces(data.get() + t * pieces * piece, order, piece);
    });
  };
  PieceReadBandwidth best;
  for (int trial = 0; trial < trials; ++trial) {
    best.in_order = std::max(best.in_order, pass(in_order));
    best.shuffled = std::max(best.shuffled, pass(shuffled));
  }
  return best;
}

}  // namespace attnforge::bench
