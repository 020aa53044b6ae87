// bench_schedules: times the naive baseline, every schedule preset and the
// OpenBLAS unfused peer on a set of attention shapes and thread counts, rated
// against the FMA peak measured in the same run. Prints a table and the command
// that made it; --json writes the rows.
#include <Halide.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_inputs.h"
#include "bench/bench_rows.h"
#include "bench/bench_shapes.h"
#include "bench/fma_peak.h"
#include "bench/openblas_attention.h"
#include "bench/timing.h"
#include "generators/attention_spec.h"
#include "generators/jit_attention.h"
#include "generators/kernel_arguments.h"
#include "schedules/presets.h"

namespace attnforge::bench {
namespace {

// Largest |impl - naive| accepted before an implementation is timed.
constexpr double kMaxAbsDiff = 1e-3;

// One implementation under test: runs on the case's inputs into BenchInputs::out.
struct Impl {
  std::string name;
  std::function<void()> run;
  std::function<void(int)> set_threads;
};

struct Skipped {
  std::string spec, shape, impl, threads, reason;
};

struct Options {
  std::vector<int> threads = {1, 2};  // ascending, see Bench::run
  TimingOptions timing;
  bool quick = false;
};

// One spec on one shape: its inputs, its compiled implementations (naive
// first) and the naive output the others must match.
struct Case {
  AttentionSpec spec;
  Shape shape;
  BenchRow where;  // spec and shape labels for rows and messages
  double flops = 0.0;
  std::unique_ptr<BenchInputs> in;  // impls point into it
  std::vector<Impl> impls;
  bool have_expected = false;
  // The naive baseline runs on one thread whatever the count: timed once, reused.
  std::unique_ptr<Timing> naive_timing;
  std::vector<BenchRow> rows;
};

class Bench {
 public:
  explicit Bench(Options options) : options_(std::move(options)) {}

  void measure_peaks() {
    for (int t : options_.threads) {
      peaks_[t] = measure_fma_peak(t, options_.quick ? 0.1 : 0.2, options_.quick ? 2 : 3);
      fmt::print(stderr, "FMA peak, {} thread{}: {:.1f} GFLOP/s\n", t, t == 1 ? "" : "s",
                 peaks_[t].gflops);
    }
  }

  void print_peaks() const {
    for (const auto& [t, peak] : peaks_) {
      fmt::print("FMA peak, {} thread{}: {:.1f} GFLOP/s ({})\n", t, t == 1 ? "" : "s", peak.gflops,
                 peak.isa);
    }
  }

  // Compiles every implementation for the shape's specs, once for all thread counts.
  void add_shape(const Shape& shape) {
    for (const std::string& text : specs_for(shape)) {
      auto c = std::make_unique<Case>();
      c->spec = AttentionSpec::parse(text);
      c->shape = shape;
      c->where.spec = c->spec.to_string();
      c->where.shape =
          shape_label(shape.batch, c->spec.heads, shape.q_len, shape.kv_len, c->spec.head_dim);
      c->flops = attention_flops(c->spec, shape.batch, shape.q_len, shape.kv_len);
      c->in = std::make_unique<BenchInputs>(c->spec, shape, 1);
      fmt::print(stderr, "{} {}: compiling\n", c->where.spec, c->where.shape);
      build_impls(*c);
      if (c->impls.empty() || c->impls.front().name != "naive") {
        fmt::print(stderr, "  no naive baseline: not benchmarked\n");
        continue;
      }
      cases_.push_back(std::move(c));
    }
  }

  // Thread counts outermost and ascending: Halide's thread pool only grows
  // (halide_set_num_threads cannot retire a worker), so a count run after a
  // larger one would still use the larger.
  void run() {
    for (int t : options_.threads) {
      for (auto& c : cases_) {
        fmt::print(stderr, "{} {}, {} threads:\n", c->where.spec, c->where.shape, t);
        run_case(*c, t);
      }
    }
  }

  // Grouped by case, then thread count.
  std::vector<BenchRow> rows() const {
    std::vector<BenchRow> all;
    for (const auto& c : cases_) all.insert(all.end(), c->rows.begin(), c->rows.end());
    return all;
  }
  const std::vector<Skipped>& skipped() const { return skipped_; }

 private:
  void skip(const BenchRow& where, const std::string& threads, const std::string& reason) {
    skipped_.push_back({where.spec, where.shape, where.impl, threads, reason});
    fmt::print(stderr, "  skipped {} ({} threads): {}\n", where.impl, threads, reason);
  }

  // A kernel that fails to compile or a preset that fails to load skips that implementation only.
  void build_impls(Case& c) {
    BenchInputs& in = *c.in;
    BenchRow where = c.where;
    auto add_jit = [&](const std::string& name, const std::string& schedule) {
      where.impl = name;
      try {
        std::shared_ptr<JitAttention> kernel = compiled(c.spec, schedule);
        c.impls.push_back({name, [kernel, &in] { kernel->run(in.args); },
                           [](int t) { JitAttention::set_num_threads(t); }});
      } catch (const std::exception& error) {
        skip(where, "all", fmt::format("compile failed: {}", error.what()));
      }
    };
    add_jit("naive", "naive");
    for (const std::string& name : schedules::preset_names()) add_jit(name, name);
    where.impl = "openblas_unfused";
    try {
      auto blas = std::make_shared<OpenBlasAttention>(c.spec);
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

  // One compile per (spec, schedule): shapes that share a spec share its kernels.
  std::shared_ptr<JitAttention> compiled(const AttentionSpec& spec, const std::string& schedule) {
    auto key = std::make_pair(spec.to_string(), schedule);
    auto found = kernels_.find(key);
    if (found != kernels_.end()) return found->second;
    auto kernel = std::make_shared<JitAttention>(
        spec, target_, std::map<std::string, std::string>{{"schedule", schedule}});
    kernels_.emplace(key, kernel);
    return kernel;
  }

  void run_case(Case& c, int threads) {
    BenchRow where = c.where;
    where.threads = threads;
    double naive_ms = std::numeric_limits<double>::quiet_NaN();
    for (const Impl& impl : c.impls) {
      where.impl = impl.name;
      const bool naive = impl.name == "naive";
      if (!naive && !c.have_expected) return;  // nothing to check against
      impl.set_threads(threads);
      try {
        if (!naive && !check(impl, *c.in, where)) continue;
        if (naive && c.naive_timing) {
          naive_ms = c.naive_timing->median_ms;
          c.rows.push_back(make_row(where, *c.naive_timing, c.flops, naive_ms));
          continue;
        }
        Timing timing = time_runs(impl.run, options_.timing);
        if (naive) c.naive_timing = std::make_unique<Timing>(timing);
        if (naive && !c.have_expected) {  // the output every other impl must match
          std::copy(c.in->out.begin(), c.in->out.end(), c.in->expected.begin());
          c.have_expected = true;
        }
        if (naive) naive_ms = timing.median_ms;
        c.rows.push_back(make_row(where, timing, c.flops, naive_ms));
      } catch (const std::exception& error) {
        skip(where, std::to_string(threads), fmt::format("run failed: {}", error.what()));
        if (naive) return;  // no baseline at this thread count
      }
    }
  }

  // One run on NaN-filled output, compared with the naive output.
  bool check(const Impl& impl, BenchInputs& in, const BenchRow& where) {
    std::fill(in.out.begin(), in.out.end(), std::numeric_limits<float>::quiet_NaN());
    impl.run();
    const double diff = in.max_abs_diff();
    if (diff <= kMaxAbsDiff) return true;
    skip(where, std::to_string(where.threads),
         fmt::format("WRONG: max |diff| vs naive = {:.3g} > {:g}", diff, kMaxAbsDiff));
    return false;
  }

  BenchRow make_row(BenchRow row, const Timing& timing, double flops, double naive_ms) const {
    row.ms_median = timing.median_ms;
    row.ms_min = timing.min_ms;
    row.ms_max = timing.max_ms;
    row.gflops = flops / (timing.median_ms * 1e-3) * 1e-9;
    row.pct_peak = 100.0 * row.gflops / peaks_.at(row.threads).gflops;
    row.speedup_vs_naive = naive_ms / timing.median_ms;
    fmt::print(stderr, "  {:<20} {:10.3f} ms ({} runs), {:.2f} GFLOP/s\n", row.impl, row.ms_median,
               timing.repeats, row.gflops);
    return row;
  }

  Options options_;
  Halide::Target target_ = Halide::get_host_target();
  std::map<int, FmaPeak> peaks_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<JitAttention>> kernels_;
  std::vector<std::unique_ptr<Case>> cases_;
  std::vector<Skipped> skipped_;
};

// argv as a shell would need it typed.
std::string command_line(int argc, char** argv) {
  std::string line;
  for (int n = 0; n < argc; ++n) {
    std::string arg = argv[n];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyz"
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_-+=/.,:@%") == std::string::npos;
    if (!plain) {
      std::string quoted = "'";
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    line += (n == 0 ? "" : " ") + arg;
  }
  return line;
}

int run_main(int argc, char** argv) {
  CLI::App app{"Times the naive baseline, every schedule preset and OpenBLAS unfused attention"};
  std::string json_path;
  Options options;
  double min_time = options.timing.min_seconds;
  std::vector<std::string> shape_texts;
  app.add_option("--json", json_path, "Write the rows as a JSON array to this file");
  app.add_option("--threads", options.threads, "Thread counts, e.g. 1,2 (run in ascending order)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* min_time_option =
      app.add_option("--min-time", min_time,
                     "Least total seconds of timed runs per row (0.5; --quick: 0.05)")
          ->check(CLI::NonNegativeNumber);
  app.add_flag("--quick", options.quick, "Tiny shapes and short timings, for a smoke run");
  app.add_option("--shapes", shape_texts,
                 "Only these shapes, as BxHxLqxLkxD (e.g. 1x8x512x512x64), comma separated")
      ->delimiter(',')
      ->check([](const std::string& text) {
        try {
          parse_shape(text);
          return std::string();
        } catch (const std::invalid_argument& error) {
          return std::string(error.what());
        }
      });
  CLI11_PARSE(app, argc, argv);

  options.timing.min_seconds = min_time_option->count() > 0 || !options.quick ? min_time : 0.05;
  std::vector<Shape> shapes = options.quick ? quick_shapes() : default_shapes();
  if (!shape_texts.empty()) {
    shapes.clear();
    for (const auto& text : shape_texts) shapes.push_back(parse_shape(text));
  }

  std::sort(options.threads.begin(), options.threads.end());
  options.threads.erase(std::unique(options.threads.begin(), options.threads.end()),
                        options.threads.end());

  Bench bench(options);
  bench.measure_peaks();
  for (const Shape& shape : shapes) bench.add_shape(shape);
  bench.run();

  fmt::print("Target: {}\n", Halide::get_host_target().to_string());
  bench.print_peaks();
  fmt::print("\n");
  const std::vector<BenchRow> rows = bench.rows();
  print_rows(rows);
  if (!bench.skipped().empty()) {
    fmt::print("\nNot timed:\n");
    for (const Skipped& s : bench.skipped()) {
      fmt::print("  {} {} {} ({} threads): {}\n", s.spec, s.shape, s.impl, s.threads, s.reason);
    }
  }
  if (!json_path.empty()) {
    write_rows_json(json_path, rows);
    fmt::print("\nWrote {} rows to {}\n", rows.size(), json_path);
  }
  fmt::print("\nCommand: {}\n", command_line(argc, argv));
  return 0;
}

}  // namespace
}  // namespace attnforge::bench

int main(int argc, char** argv) {
  try {
    return attnforge::bench::run_main(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_schedules: {}\n", error.what());
    return 1;
  }
}
