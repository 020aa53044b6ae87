#include "bench/schedule_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "algorithm/modifier_key_ranges.h"
#include "autotune/builder.h"
#include "autotune/modifier_samples.h"
#include "bench/bench_inputs.h"
#include "bench/mask_census.h"
#include "bench/openblas_attention.h"
#include "bench/output_check.h"
#include "bench/read_bandwidth.h"
#include "bench/torch_peer.h"
#include "schedules/one_query_tiles.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "spec/kv_quantization.h"

namespace attnforge::bench {

namespace {

// Turns in which the implementations of a shape are timed (timing.h).
constexpr int kRounds = 8;

}  // namespace

// One implementation under test: runs on the case's inputs into BenchInputs::out.
struct Impl {
  std::string name;
  std::function<void()> run;
  std::function<void(int)> set_threads;
};

// One spec on one shape: its inputs, its compiled implementations (naive
// first) and the naive output the others must match.
struct Case {
  AttentionSpec spec;
  // What spec computes here: a window given per call with its sizes compiled
  // in, as the peers and the counts of FLOPs and bytes take it.
  AttentionSpec computed;
  Shape shape;
  int shape_index = 0;  // cases of one add_shape are timed together
  BenchRow where;       // spec and shape labels for rows and messages
  double flops = 0.0;
  double bytes = 0.0;               // attention_bytes() where memory-bound (few query rows), else 0
  std::unique_ptr<BenchInputs> in;  // impls point into it
  autotune::ModifierSamples modifier_samples;  // a modifier's tensors, which in->args points at
  // A mask rule: the pairs attended (mask_census.h), for FLOPs and the torch peer.
  Halide::Runtime::Buffer<uint8_t> attended;
  std::vector<Impl> impls;
  // The naive baseline runs on one thread whatever the count: timed once, reused.
  std::unique_ptr<Timing> naive_timing;
  std::vector<BenchRow> rows;
  // The read probe's GB/s in the turns of this case's shape, per thread count.
  std::map<int, double> read_gbps;
};

ScheduleBench::ScheduleBench(BenchOptions options) : options_(std::move(options)) {}
ScheduleBench::~ScheduleBench() = default;

void ScheduleBench::measure_peaks() {
  std::sort(options_.threads.begin(), options_.threads.end());
  options_.threads.erase(std::unique(options_.threads.begin(), options_.threads.end()),
                         options_.threads.end());
  for (int t : options_.threads) {
    peaks_[t] = measure_fma_peak(t, options_.quick ? 0.1 : 0.2, options_.quick ? 2 : 3);
    fmt::print(stderr, "FMA peak, {} thread{}: {:.1f} GFLOP/s\n", t, t == 1 ? "" : "s",
               peaks_[t].gflops);
    read_gbps_[t] = measure_read_bandwidth(t, (options_.quick ? 128.0 : 512.0) * (1 << 20));
    fmt::print(stderr, "Read bandwidth, {} thread{}: {:.1f} GB/s\n", t, t == 1 ? "" : "s",
               read_gbps_[t]);
  }
}

void ScheduleBench::print_peaks() const {
  for (const auto& [t, peak] : peaks_) {
    fmt::print("FMA peak, {} thread{}: {:.1f} GFLOP/s ({})\n", t, t == 1 ? "" : "s", peak.gflops,
               peak.isa);
  }
  for (const auto& [t, gbps] : read_gbps_) {
    fmt::print(
        "Read bandwidth, {} thread{}: {:.1f} GB/s at the start; rows with a % bw are rated "
        "against the read probe timed in turns with them (read_gbps in the JSON)\n",
        t, t == 1 ? "" : "s", gbps);
  }
  for (const auto& [key, reads] : page_reads_) {
    const auto [threads, bytes] = key;
    fmt::print(
        "Reads of {}-byte pieces (a KV head's page), {} thread{}: {:.1f} GB/s in a random "
        "order, {:.1f} GB/s in order ({:.3f}x the time)\n",
        bytes, threads, threads == 1 ? "" : "s", reads.shuffled, reads.in_order,
        reads.in_order / reads.shuffled);
  }
  if (eviction_) {
    fmt::print("Rows with a % bw: {} MiB written, untimed, before every run to evict the caches\n",
               eviction_->bytes() >> 20);
  } else if (options_.warm_caches) {
    fmt::print("Rows with a % bw: timed back to back, the caches warm from the last run\n");
  }
}

void ScheduleBench::add_shape(const Shape& shape) {
  std::vector<std::string> specs = options_.specs;
  if (specs.empty()) specs = shape.specs.empty() ? specs_for(shape) : shape.specs;
  for (const std::string& text : specs) {
    auto c = std::make_unique<Case>();
    c->spec = AttentionSpec::parse(text);
    c->computed = with_window(c->spec, options_.window.first, options_.window.second);
    c->shape = shape;
    c->shape_index = shapes_added_;
    c->shape.heads = c->spec.heads;
    c->shape.head_dim = c->spec.head_dim;
    c->where.spec = c->spec.to_string();
    c->where.shape =
        shape_label(shape.batch, c->spec.heads, shape.q_len, shape.kv_len, c->spec.head_dim);
    c->flops = attention_flops(c->computed, shape.batch, shape.q_len, shape.kv_len);
    if (shape.q_len <= kMemoryBoundQueries) {
      c->bytes = attention_bytes(c->computed, shape.batch, shape.q_len, shape.kv_len);
    }
    c->in = std::make_unique<BenchInputs>(c->spec, c->shape, 1);
    c->in->args.window_left = options_.window.first;
    c->in->args.window_right = options_.window.second;
    c->modifier_samples =
        autotune::ModifierSamples(c->spec, shape.batch, shape.q_len, shape.kv_len);
    c->modifier_samples.attach(c->in->args);
    if (has_mask_rule(c->spec)) {
      c->attended = attended_pairs_of(c->computed, c->in->args);
      c->flops = 4.0 * c->spec.head_dim * attended_pair_count(c->computed, c->attended);
    }
    fmt::print(stderr, "{} {}: compiling\n", c->where.spec, c->where.shape);
    build_impls(*c);
    if (c->impls.empty() || c->impls.front().name != "naive") {
      fmt::print(stderr, "  no naive baseline: not benchmarked\n");
      continue;
    }
    cases_.push_back(std::move(c));
  }
  ++shapes_added_;
}

// Thread counts outermost and ascending: Halide's thread pool only grows
// (halide_set_num_threads cannot retire a worker), so a count run after a
// larger one would still use the larger.
void ScheduleBench::run() {
  std::sort(options_.threads.begin(), options_.threads.end());
  options_.threads.erase(std::unique(options_.threads.begin(), options_.threads.end()),
                         options_.threads.end());
  for (int t : options_.threads) {
    measure_page_reads(t);
    for (size_t first = 0; first < cases_.size();) {
      size_t end = first + 1;
      while (end < cases_.size() && cases_[end]->shape_index == cases_[first]->shape_index) ++end;
      run_shape(first, end, t);
      first = end;
    }
  }
}

std::vector<BenchRow> ScheduleBench::rows() const {
  std::vector<BenchRow> all;
  for (const auto& c : cases_) all.insert(all.end(), c->rows.begin(), c->rows.end());
  return all;
}

void ScheduleBench::report(const std::string& json_path, const std::string& command) const {
  fmt::print("Target: {}\n", target_.to_string());
  print_peaks();
  fmt::print("\n");
  const std::vector<BenchRow> all = rows();
  print_rows(all);
  if (!skipped_.empty()) {
    fmt::print("\nNot timed:\n");
    for (const Skipped& s : skipped_) {
      fmt::print("  {} {} {} ({} threads): {}\n", s.spec, s.shape, s.impl, s.threads, s.reason);
    }
  }
  if (!json_path.empty()) {
    write_rows_json(json_path, all);
    fmt::print("\nWrote {} rows to {}\n", all.size(), json_path);
  }
  fmt::print("\nCommand: {}\n", command);
}

void ScheduleBench::skip(const BenchRow& where, const std::string& threads,
                         const std::string& reason) {
  skipped_.push_back({where.spec, where.shape, where.impl, threads, reason});
  fmt::print(stderr, "  skipped {} ({} threads): {}\n", where.impl, threads, reason);
}

// A kernel that fails to compile skips that implementation only.
void ScheduleBench::build_impls(Case& c) {
  BenchInputs& in = *c.in;
  BenchRow where = c.where;
  auto add_kernel = [&](const std::string& name,
                        const std::function<std::shared_ptr<JitAttention>()>& build) {
    where.impl = name;
    try {
      std::shared_ptr<JitAttention> kernel = build();
      c.impls.push_back({name, [kernel, &in] { kernel->run(in.args); },
                         [](int t) { JitAttention::set_num_threads(t); }});
      if (has_mask_rule(c.spec) && name != "naive") add_key_range_variants(c, name, kernel);
    } catch (const std::exception& error) {
      skip(where, "all", fmt::format("compile failed: {}", error.what()));
    }
  };
  auto add_jit = [&](const std::string& name, const std::string& schedule) {
    add_kernel(name, [&] { return compiled(c.spec, schedule); });
  };
  add_jit("naive", "naive");
  if (options_.presets) {
    const std::vector<std::string>& only = options_.preset_names;
    for (const std::string& name : schedules::presets_for(target_)) {
      if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
      const schedules::Schedule preset = schedules::load_preset(name);
      // Another ISA's presets are left out unless named; one that does not fit
      // the spec (bf16 dots on f32, say) is not compiled, and listed once per spec.
      if (only.empty() && preset.vector_width > schedules::native_vector_width(target_)) continue;
      if (auto misfit = schedules::check(preset, c.spec, target_)) {
        if (misfits_.insert({c.where.spec, name}).second) {
          where.impl = name;
          skip(where, "all", fmt::format("does not fit: {}", misfit->what()));
        }
        continue;
      }
      add_jit(name, name);
      // One row per head: the preset as a package's one-row kernel cuts it.
      if (c.shape.q_len == 1) {
        if (auto one_query = schedules::one_query_tiles(preset, c.spec, target_)) {
          add_jit(name + " q1", one_query->to_json().dump());
        }
      }
    }
  }
  if (auto tuned = tuned_schedule_for(options_.tuned, c.where.spec, c.shape.batch, c.shape.q_len,
                                      c.shape.kv_len)) {
    add_jit("tuned", *tuned);
  }
  if (options_.autoschedulers) {
    const int threads = *std::max_element(options_.threads.begin(), options_.threads.end());
    for (const autotune::HalideAutoscheduler& a : autotune::x86_autoschedulers(threads)) {
      add_kernel(a.name, [&] {
        autotune::JitBuild build = autotune::build_jit(autotune::autoscheduled_candidate(
            c.spec, target_, a, c.shape.batch, c.shape.q_len, c.shape.kv_len));
        if (build.status != autotune::Status::ok) throw std::runtime_error(build.detail);
        return std::shared_ptr<JitAttention>(std::move(build.kernel));
      });
    }
  }
  where.impl = "openblas_unfused";
  try {
    auto blas = std::make_shared<OpenBlasAttention>(c.computed);
    const Shape shape = c.shape;
    c.impls.push_back({where.impl,
                       [blas, &in, shape] {
                         blas->run(in.q.data(), in.k.data(), in.v.data(), in.out.data(),
                                   shape.batch, shape.q_len, shape.kv_len, in.args.scale);
                       },
                       [blas](int t) { blas->set_num_threads(t); }});
  } catch (const std::exception& error) {
    skip(where, "all", error.what());
  }
}

// A kernel of a mask rule again: with its key ranges computed once and kept
// (as a caller that asks for them passes them to every call), and with a
// table that skips no block, the rule applied to every key.
void ScheduleBench::add_key_range_variants(Case& c, const std::string& name,
                                           const std::shared_ptr<JitAttention>& kernel) {
  BenchInputs& in = *c.in;
  using Table = Halide::Runtime::Buffer<int32_t>;
  const auto kept = std::make_shared<Table>(kernel->key_ranges(in.args));
  const auto every_key = std::make_shared<Table>(kernel->key_ranges_of_every_key(in.args));
  for (const auto& [suffix, table] : {std::pair{" kept", kept}, std::pair{" dense", every_key}}) {
    c.impls.push_back({name + suffix,
                       [kernel, &in, table = table] {
                         KernelArguments args = in.args;
                         args.modifier_key_ranges = table->raw_buffer();
                         kernel->run(args);
                       },
                       [](int t) { JitAttention::set_num_threads(t); }});
  }
}

// One compile per (spec, schedule): shapes that share a spec share its kernels.
std::shared_ptr<JitAttention> ScheduleBench::compiled(const AttentionSpec& spec,
                                                      const std::string& schedule) {
  auto key = std::make_pair(spec.to_string(), schedule);
  auto found = kernels_.find(key);
  if (found != kernels_.end()) return found->second;
  auto kernel = std::make_shared<JitAttention>(
      spec, target_, std::map<std::string, std::string>{{"schedule", schedule}});
  kernels_.emplace(key, kernel);
  return kernel;
}

// The naive row of a case, then the implementations whose output matches it.
std::vector<const Impl*> ScheduleBench::checked_impls(Case& c, int threads) {
  BenchRow where = c.where;
  where.threads = threads;
  const Impl& naive = c.impls.front();  // its output is what every other must match
  where.impl = naive.name;
  naive.set_threads(threads);
  try {
    if (!c.naive_timing) {
      c.naive_timing = std::make_unique<Timing>(time_runs(naive.run, timing_for(c)));
      c.in->read_output();
      std::copy(c.in->out.begin(), c.in->out.end(), c.in->expected.begin());
    }
  } catch (const std::exception& error) {
    skip(where, std::to_string(threads), fmt::format("run failed: {}", error.what()));
    return {};  // no baseline at this thread count
  }
  c.rows.push_back(make_row(where, *c.naive_timing, c, c.naive_timing->median_ms));

  // Each checked once on NaN-filled output.
  std::vector<const Impl*> correct;
  for (size_t n = 1; n < c.impls.size(); ++n) {
    const Impl& impl = c.impls[n];
    where.impl = impl.name;
    impl.set_threads(threads);
    try {
      c.in->poison_output();
      impl.run();
      c.in->read_output();
      const autotune::CheckResult check = check_output(c.in->out, c.in->expected, c.spec.dtype);
      if (check.ok) {
        correct.push_back(&impl);
      } else {
        skip(where, std::to_string(threads), "WRONG: " + check.detail);
      }
    } catch (const std::exception& error) {
      skip(where, std::to_string(threads), fmt::format("run failed: {}", error.what()));
    }
  }
  return correct;
}

// Every correct implementation of every spec at one shape, timed in the same
// turns: a ratio across specs (a paged cache against a contiguous one) then
// compares runs under the same load, as a ratio within one spec does.
void ScheduleBench::run_shape(size_t first, size_t end, int threads) {
  std::vector<std::pair<Case*, const Impl*>> timed;
  for (size_t n = first; n < end; ++n) {
    Case& c = *cases_[n];
    fmt::print(stderr, "{} {}, {} threads:\n", c.where.spec, c.where.shape, threads);
    for (const Impl* impl : checked_impls(c, threads)) timed.emplace_back(&c, impl);
  }
  std::vector<std::function<void()>> runs;
  for (const auto& [c, impl] : timed) runs.push_back(impl->run);
  // The cases of one shape are all memory-bound or none is: the read probe
  // they are rated against runs in the same turns.
  const bool memory_bound = !timed.empty() && timed.front().first->bytes > 0;
  if (memory_bound) {
    if (!probe_) probe_ = std::make_unique<ReadProbe>((options_.quick ? 128.0 : 512.0) * (1 << 20));
    runs.push_back([probe = probe_.get(), threads] { probe->run(threads); });
  }
  const TimingOptions timing = timed.empty() ? options_.timing : timing_for(*timed.front().first);
  const std::vector<Timing> timings = time_interleaved(runs, kRounds, timing);
  if (memory_bound) {
    const double gbps = probe_->gbps(timings.back().median_ms);
    fmt::print(stderr, "  read probe: {:.1f} GB/s (median of {} runs in these turns)\n", gbps,
               timings.back().repeats);
    for (size_t n = first; n < end; ++n) rate_against(*cases_[n], threads, gbps);
  }
  std::vector<BenchRow> rows;
  for (size_t n = 0; n < timed.size(); ++n) {
    const auto& [c, impl] = timed[n];
    BenchRow where = c->where;
    where.threads = threads;
    where.impl = impl->name;
    rows.push_back(make_row(where, timings[n], *c, c->naive_timing->median_ms));
  }
  set_vs_contiguous(rows, timings);
  set_vs_bf16(rows, timings);
  set_vs_plain(rows, timings, options_.window);
  for (size_t n = 0; n < timed.size(); ++n) timed[n].first->rows.push_back(rows[n]);
  if (options_.torch_python.empty()) return;
  for (size_t n = first; n < end; ++n) {
    Case& c = *cases_[n];
    if (!c.naive_timing) continue;
    BenchRow where = c.where;
    where.threads = threads;
    run_torch(c, where, c.naive_timing->median_ms);
  }
}

// What reading each paged spec's pages scattered costs the machine itself,
// next to the paged rows' `vs contig`.
void ScheduleBench::measure_page_reads(int threads) {
  for (const auto& c : cases_) {
    if (!c->spec.paged() || c->bytes <= 0) continue;
    const int bytes = c->spec.page_size * c->spec.head_dim * cache_element_bytes(c->spec);
    if (page_reads_.count({threads, bytes})) continue;
    const PieceReadBandwidth reads = measure_piece_read_bandwidth(threads, bytes);
    page_reads_[{threads, bytes}] = reads;
    fmt::print(stderr,
               "Reads of {}-byte pieces, {} threads: {:.1f} GB/s shuffled, {:.1f} in order\n",
               bytes, threads, reads.shuffled, reads.in_order);
  }
}

TimingOptions ScheduleBench::timing_for(const Case& c) {
  TimingOptions timing = options_.timing;
  if (c.bytes <= 0 || options_.warm_caches) return timing;
  if (!eviction_) eviction_ = std::make_unique<CacheEviction>();
  timing.before_each = [eviction = eviction_.get()] { (*eviction)(); };
  return timing;
}

void ScheduleBench::run_torch(Case& c, BenchRow where, double naive_ms) {
  where.impl = "torch_sdpa";
  const std::size_t evict_bytes = timing_for(c).before_each ? eviction_->bytes() : 0;
  TorchResult result = run_torch_sdpa(options_.torch_python, c.computed, c.shape, where.threads,
                                      *c.in, options_.timing.min_seconds, evict_bytes,
                                      c.attended.data() ? &c.attended : nullptr);
  if (!result.path.empty()) where.impl = "torch_" + result.path;
  if (!result.error.empty()) {
    skip(where, std::to_string(where.threads), result.error);
    return;
  }
  const autotune::CheckResult check = check_output(result.output, c.in->expected, c.spec.dtype);
  if (check.ok) {
    c.rows.push_back(make_row(where, result.timing, c, naive_ms));
  } else {
    skip(where, std::to_string(where.threads), "WRONG: " + check.detail);
  }
}

// Rows of `c` at `threads` (its naive row, timed before the turns) and the
// rows timed after are rated against `gbps`.
void ScheduleBench::rate_against(Case& c, int threads, double gbps) {
  c.read_gbps[threads] = gbps;
  for (BenchRow& row : c.rows) {
    if (row.threads != threads) continue;
    row.read_gbps = gbps;
    row.pct_bandwidth = 100.0 * c.bytes / (row.ms_median * 1e6) / gbps;
  }
}

BenchRow ScheduleBench::make_row(BenchRow row, const Timing& timing, const Case& c,
                                 double naive_ms) const {
  row.ms_median = timing.median_ms;
  row.ms_min = timing.min_ms;
  row.ms_max = timing.max_ms;
  row.gflops = c.flops / (timing.median_ms * 1e-3) * 1e-9;
  const auto read = c.read_gbps.find(row.threads);
  if (c.bytes > 0 && read != c.read_gbps.end() && read->second > 0) {
    row.read_gbps = read->second;
    row.pct_bandwidth = 100.0 * c.bytes / (timing.median_ms * 1e6) / read->second;
  }
  row.pct_peak = 100.0 * row.gflops / peaks_.at(row.threads).gflops;
  row.speedup_vs_naive = naive_ms / timing.median_ms;
  fmt::print(stderr, "  {:<20} {:10.3f} ms ({} runs), {:.2f} GFLOP/s\n", row.impl, row.ms_median,
             timing.repeats, row.gflops);
  return row;
}

}  // namespace attnforge::bench
