// The benchmark of one run: the naive baseline, the schedule presets, tuned
// schedules, Halide's autoschedulers, OpenBLAS unfused attention and, when a
// Python with PyTorch is given, its scaled_dot_product_attention, on a set of
// shapes and thread counts, each rated against the FMA peak measured in the
// same run. Every implementation's output is checked against the naive
// kernel's before it is timed.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_rows.h"
#include "bench/bench_shapes.h"
#include "bench/cache_eviction.h"
#include "bench/fma_peak.h"
#include "bench/read_bandwidth.h"
#include "bench/timing.h"
#include "bench/tuned_schedules.h"
#include "generators/jit_attention.h"

namespace attnforge::bench {

struct BenchOptions {
  std::vector<int> threads = {1, 2};  // run in ascending order, see ScheduleBench::run
  TimingOptions timing;
  bool quick = false;
  bool presets = true;
  std::vector<std::string> preset_names;  // only these presets (empty: all of the target's)
  // Timed as "tuned" (tuned_schedule_for).
  TunedSchedules tuned;
  bool autoschedulers = false;     // Halide's x86 autoschedulers at each shape
  std::string torch_python;        // a Python that imports torch; empty: no torch rows
  std::vector<std::string> specs;  // only these specs (empty: specs_for each shape)
  // Rows with a % bw (and their torch row) run back to back instead of after
  // writing a buffer larger than the caches: what is left of the inputs in the
  // caches from the last run is read from there.
  bool warm_caches = false;
  // The sizes a spec whose window is given per call (mask `window`) runs with.
  std::pair<int, int> window = {256, 0};
};

struct Skipped {
  std::string spec, shape, impl, threads, reason;
};

struct Case;
struct Impl;

class ScheduleBench {
 public:
  explicit ScheduleBench(BenchOptions options);
  ~ScheduleBench();

  void measure_peaks();
  void print_peaks() const;
  // Compiles every implementation for the shape's specs, once for all thread counts.
  void add_shape(const Shape& shape);
  void run();

  // Grouped by case, then thread count.
  std::vector<BenchRow> rows() const;
  const std::vector<Skipped>& skipped() const { return skipped_; }

  // Prints the target, the peaks, the table, what was not timed and `command`;
  // writes the rows to `json_path` unless it is empty.
  void report(const std::string& json_path, const std::string& command) const;

 private:
  void skip(const BenchRow& where, const std::string& threads, const std::string& reason);
  void build_impls(Case& c);
  void add_key_range_variants(Case& c, const std::string& name,
                              const std::shared_ptr<JitAttention>& kernel);
  std::vector<const Impl*> checked_impls(Case& c, int threads);
  void run_shape(size_t first, size_t end, int threads);
  void measure_page_reads(int threads);
  void run_torch(Case& c, BenchRow where, double naive_ms);
  BenchRow make_row(BenchRow row, const Timing& timing, const Case& c, double naive_ms) const;
  void rate_against(Case& c, int threads, double gbps);
  // The timing of a case's runs: memory-bound cases (those rated against the
  // read bandwidth) with the caches evicted before every run.
  TimingOptions timing_for(const Case& c);
  // Halide's JIT target: the host.
  Halide::Target target_ = Halide::get_host_target();

  BenchOptions options_;
  std::map<int, FmaPeak> peaks_;
  std::map<int, double> read_gbps_;  // read bandwidth per thread count
  // Reads in pieces of a paged spec's page per (thread count, page bytes).
  std::map<std::pair<int, int>, PieceReadBandwidth> page_reads_;
  std::shared_ptr<JitAttention> compiled(const AttentionSpec& spec, const std::string& schedule);

  std::map<std::pair<std::string, std::string>, std::shared_ptr<JitAttention>> kernels_;
  std::vector<std::unique_ptr<Case>> cases_;
  int shapes_added_ = 0;
  std::vector<Skipped> skipped_;
  std::set<std::pair<std::string, std::string>> misfits_;  // (spec, preset) listed as not fitting
  std::unique_ptr<CacheEviction> eviction_;                // made for the first memory-bound case
  std::unique_ptr<ReadProbe> probe_;                       // made for the first memory-bound case
};

}  // namespace attnforge::bench
