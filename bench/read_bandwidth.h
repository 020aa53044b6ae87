// The machine's memory read bandwidth, measured in this process: N threads
// each sum their share of a buffer far larger than the caches. Decoding
// attention streams its K/V cache once, so its rows are rated against this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnforge::bench {

// Best of `trials` passes, in GB/s (1e9 bytes), of `threads` threads reading
// one buffer of `bytes` together, each its own contiguous share.
double measure_read_bandwidth(int threads, double bytes = 512.0 * (1 << 20), int trials = 3);

// One pass of measure_read_bandwidth's read, to time in turns with the rows
// it rates (time_interleaved): the machine's bandwidth drifts between runs
// minutes apart, so a probe once per run makes a % bw noise.
class ReadProbe {
 public:
  explicit ReadProbe(double bytes = 512.0 * (1 << 20));
  ~ReadProbe();
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;
  // One read of the whole buffer by `threads` threads.
  void run(int threads) const;
  // GB/s of a pass that took `ms`.
  double gbps(double ms) const { return bytes_ / (ms * 1e6); }

 private:
  size_t floats_;
  double bytes_;
  float* data_;
};

// The sum of the pieces of `piece_floats` (whole 64-byte lines) at `share`,
// read in `order` a line at a time, each line prefetched 8 KB ahead in that order.
float sum_of_pieces(const float* share, const std::vector<uint32_t>& order, size_t piece_floats);

// The read of measure_read_bandwidth in pieces of `piece_bytes` (one KV head's
// page of a paged cache; rounded up to whole lines), each thread's share in
// order and in a random order, as a page table scatters pages, with
// sum_of_pieces: the decoding kernels prefetch 8 KB ahead too. Best of
// `trials` alternating passes, GB/s.
struct PieceReadBandwidth {
  double in_order = 0.0, shuffled = 0.0;
};
PieceReadBandwidth measure_piece_read_bandwidth(int threads, int piece_bytes,
                                                double bytes = 256.0 * (1 << 20), int trials = 3);

}  // namespace attnforge::bench
