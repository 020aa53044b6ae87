// One benchmark result per (spec, shape, implementation, thread count), the
// FLOP count it is rated by, and its two outputs: a table and a JSON file.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench/timing.h"
#include "spec/attention_spec.h"

namespace attnforge::bench {

struct BenchRow {
  std::string spec;   // canonical spec string
  std::string shape;  // shape_label()
  std::string impl;   // "naive", a preset name, or "openblas_unfused"
  int threads = 1;
  double ms_median = 0.0;
  double ms_min = 0.0;
  double ms_max = 0.0;
  double gflops = 0.0;    // attention_flops() / median time
  double pct_peak = 0.0;  // of the FMA peak measured for this thread count
  double speedup_vs_naive = 0.0;
  // Memory-bound rows (decoding: at most kMemoryBoundQueries query rows):
  // attention_bytes() over the median time, as a percent of the read
  // bandwidth measured in the same run; 0 for other rows.
  double pct_bandwidth = 0.0;
  // Paged-cache rows: this time over the same implementation's on the same
  // spec with a contiguous cache, as the median of the per-turn ratios (both
  // timed in the same turns); 0 where that spec was not run.
  double vs_contiguous = 0.0;
  // 8-bit cache (kv8) rows: this time over the same implementation's on the
  // spec with a bf16 cache (bf16 storage, no kv8), as vs_contiguous; 0 where
  // that spec was not run.
  double vs_bf16 = 0.0;
  // Modifier rows (a softcap, a window given per call, a user's modifier):
  // this time over the same implementation's on the spec without them (no
  // softcap or modifier, the window compiled in), as vs_contiguous; 0 where
  // that spec was not run.
  double vs_plain = 0.0;
  // The read bandwidth % bw is counted against: the median of the read probe
  // timed in turns with the rows (GB/s); 0 for rows without a % bw.
  double read_gbps = 0.0;
};

// Query rows up to which attention reads far more bytes than it computes FLOPs per byte.
constexpr int kMemoryBoundQueries = 16;

// e.g. "B1 H8 Lq2048 Lk2048 D64".
std::string shape_label(int batch, int heads, int q_len, int kv_len, int head_dim);

// (query, key) pairs one (batch, head) attends to under the spec's position
// mask, counted exactly for its alignment. Key padding is data and not counted.
long long attended_pairs(const AttentionSpec& spec, int q_len, int kv_len);

// Useful work: 2 FLOPs for Q.K^T and 2 for P.V per attended pair and head-dim
// element (the softmax is not counted).
double attention_flops(const AttentionSpec& spec, int batch, int q_len, int kv_len);

// Bytes attention must move at least once: Q and the output, the K and V rows
// some query sees (the union over one head's rows, by the position mask),
// and a bias tensor's visible entries.
double attention_bytes(const AttentionSpec& spec, int batch, int q_len, int kv_len);

// Sets vs_contiguous on each paged row from the row of the same
// implementation and thread count on its spec with a contiguous cache, where
// there is one. rows[n] was timed as timings[n], all in the same turns.
void set_vs_contiguous(std::vector<BenchRow>& rows, const std::vector<Timing>& timings);

// Sets vs_bf16 on each kv8 row likewise, from the rows of its spec with a
// bf16 cache.
void set_vs_bf16(std::vector<BenchRow>& rows, const std::vector<Timing>& timings);

// Sets vs_plain on each softcapped, run-time window or modifier row likewise,
// from the rows of its spec without a softcap or modifier and with `window`
// (left, right) compiled in.
void set_vs_plain(std::vector<BenchRow>& rows, const std::vector<Timing>& timings,
                  std::pair<int, int> window);

// An object with exactly the BenchRow field names as keys, in field order.
void to_json(nlohmann::ordered_json& json, const BenchRow& row);

// Writes the rows as a JSON array; throws std::runtime_error if the file cannot be written.
void write_rows_json(const std::string& path, const std::vector<BenchRow>& rows);

// argv as a shell would need it typed, for "the command that made it".
std::string command_line(int argc, char** argv);

// A fixed-width table, a rule between (spec, shape) groups.
void print_rows(const std::vector<BenchRow>& rows, std::FILE* stream = stdout);

}  // namespace attnforge::bench
