// The machine's memory read bandwidth, measured in this process: N threads
// each sum their share of a buffer far larger than the caches. Decoding
// attention streams its K/V cache once, so its rows are rated against this.
#pragma once

namespace attnforge::bench {

// Best of `trials` passes, in GB/s (1e9 bytes), of `threads` threads reading
// one buffer of `bytes` together, each its own contiguous share.
double measure_read_bandwidth(int threads, double bytes = 512.0 * (1 << 20), int trials = 3);

}  // namespace attnforge::bench
