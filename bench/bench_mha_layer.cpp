// bench_mha_layer: one run over self-attention layers (d_model 512 with 8 heads
// and 768 with 12, at L 512 and 2048 by default) of the naive baseline (the
// same algorithm, unscheduled), layer schedules (the presets' forms with the
// target's projection defaults, and the tuned ones of a database), the OpenBLAS
// composition (GEMMs plus unfused attention) and, where a Python imports
// torch, torch.nn.MultiheadAttention in eval mode. The layer also runs ahead of
// time, through attnforge::mha_layer and the kernel package linked in (its
// generic kernels for the default specs, emitted at build time): row
// aot_runtime, the same schedule as its JIT row, so the two agree within noise.
// Every output is checked against the naive kernel's, then they are timed in
// turns; rows as the other benchmarks.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnforge/halide_view.h"
#include "attnforge/mha_layer.h"
#include "bench/bench_rows.h"
#include "bench/fma_peak.h"
#include "bench/layer_inputs.h"
#include "bench/openblas_layer.h"
#include "bench/output_check.h"
#include "bench/timing.h"
#include "bench/torch_peer.h"
#include "bench/tuned_schedules.h"
#include "generators/jit_attention.h"
#include "generators/jit_layer.h"
#include "schedules/presets.h"
#include "schedules/space.h"

namespace attnforge::bench {
namespace {

// Turns in which the implementations of a case are timed.
constexpr int kRounds = 4;

struct Options {
  std::string json, db, torch = "auto";
  std::vector<std::string> specs = {"self.dm512.full.mha8.d64.f32",
                                    "self.dm768.full.mha12.d64.f32"};
  std::vector<int> lengths = {512, 2048};
  int batch = 1;
  int threads = 2;
  double min_time = 1.0;
  bool presets = true;
  std::map<std::string, std::string> schedules;  // extra rows: name -> schedule JSON
};

// Useful work: the three projections, the attention's two products and the
// output projection, 2 FLOPs per multiply-add.
double layer_flops(const LayerSpec& spec, int batch, int len) {
  const double rows = static_cast<double>(batch) * len;
  const double heads_features = spec.attention.heads * spec.head_dim();
  return 2.0 * rows * spec.d_model * (spec.qkv_features() + heads_features) +
         attention_flops(spec.attention, batch, len, len);
}

std::string layer_shape_label(const LayerSpec& spec, LayerShape shape) {
  return fmt::format("B{} L{} dm{} H{}", shape.batch, shape.len, spec.d_model,
                     spec.attention.heads);
}

// The layer through the runtime: views of the inputs' tensors and the options
// that ask for the spec's layer kernel (no key padding or bias: the inputs have none).
struct RuntimeLayerCall {
  RuntimeLayerCall(const LayerSpec& spec, LayerInputs& in)
      : x(view_of(*in.x.raw_buffer())),
        w_qkv(view_of(*in.w_qkv.raw_buffer())),
        b_qkv(view_of(*in.b_qkv.raw_buffer())),
        w_o(view_of(*in.w_o.raw_buffer())),
        b_o(view_of(*in.b_o.raw_buffer())),
        out(view_of(*in.out.raw_buffer())) {
    p.w_qkv = &w_qkv;
    p.w_o = &w_o;
    if (spec.projection_bias) {
      p.b_qkv = &b_qkv;
      p.b_o = &b_o;
    }
    const AttentionSpec& a = spec.attention;
    options.heads = a.heads;
    options.kv_heads = a.kv_heads;
    options.attention.mask = a.mask == PositionMask::causal   ? MaskKind::causal
                             : a.mask == PositionMask::window ? MaskKind::sliding_window
                                                              : MaskKind::none;
    options.attention.window_left = a.window_left;
    options.attention.window_right = a.window_right;
    options.attention.alignment = a.alignment == Alignment::bottom_right
                                      ? MaskAlignment::bottom_right
                                      : MaskAlignment::top_left;
  }

  TensorView x, w_qkv, b_qkv, w_o, b_o, out;
  LayerParameters p;
  LayerOptions options;
};

class LayerBench {
 public:
  explicit LayerBench(const Options& options) : options_(options) {
    peak_ = measure_fma_peak(options.threads);
    JitAttention::set_num_threads(options.threads);
    set_num_threads(options.threads);  // the AOT kernels' own Halide runtime
    if (!options.db.empty()) tuned_ = tuned_schedules(options.db);
    const int width = schedules::native_vector_width(target_);
    if (options.presets && width >= 8) {
      // Not the materialized form: at these sizes it is several times slower,
      // and its score matrices (hundreds of MB) disturb the timing of what follows.
      for (const char* form : {"online", "fused"}) {
        const std::string name = fmt::format("{}_{}", form, width == 16 ? "avx512" : "avx2");
        schedules_[name] = schedules::load_preset(name).to_json().dump();
      }
    }
    for (const auto& [name, json] : options.schedules) schedules_[name] = json;
    if (options.torch == "auto") {
      if (python_has_torch(ATTNFORGE_PYTHON)) torch_ = ATTNFORGE_PYTHON;
    } else if (options.torch != "none") {
      if (!python_has_torch(options.torch)) {
        throw std::invalid_argument("--torch: " + options.torch + " cannot import torch");
      }
      torch_ = options.torch;
    }
  }

  void run_case(const LayerSpec& spec, LayerShape shape) {
    LayerInputs in(spec, shape, 7);
    BenchRow where{spec.to_string(), layer_shape_label(spec, shape), "", options_.threads};
    const double flops = layer_flops(spec, shape.batch, shape.len);

    JitLayer naive(spec, target_, {{"schedule", "naive"}});
    naive.run(in.args);
    std::memcpy(in.expected.data(), in.out.data(), in.out.size_in_bytes());
    const Timing naive_timing = time_runs([&] { naive.run(in.args); }, timing());
    add(where, "naive", naive_timing, flops, naive_timing.median_ms);

    std::map<std::string, std::string> layer_schedules = schedules_;
    if (auto tuned =
            tuned_schedule_for(tuned_, spec.to_string(), shape.batch, shape.len, shape.len)) {
      layer_schedules["tuned"] = *tuned;
    }
    // Checked one by one, then timed in turns (kernels stay compiled meanwhile).
    std::vector<std::unique_ptr<JitLayer>> kernels;
    std::vector<std::string> names;
    std::vector<std::function<void()>> runs;
    for (const auto& [name, json] : layer_schedules) {
      try {
        kernels.push_back(std::make_unique<JitLayer>(
            spec, target_, std::map<std::string, std::string>{{"schedule", json}}));
        JitLayer* kernel = kernels.back().get();
        if (correct(
                where, name, [&in, kernel] { kernel->run(in.args); }, in, spec.attention.dtype)) {
          names.push_back(name);
          runs.push_back([&in, kernel] { kernel->run(in.args); });
        }
      } catch (const std::exception& error) {
        skip(where, name, error.what());
      }
    }
    RuntimeLayerCall aot(spec, in);
    KernelChoice choice;
    const Status chosen = choose_layer_kernel(aot.x, nullptr, aot.p, aot.out, aot.options, &choice);
    if (!chosen.ok()) {
      skip(where, "aot_runtime", chosen.message);
    } else if (spec.attention.key_padding || spec.attention.bias != BiasKind::none) {
      skip(where, "aot_runtime", "the benchmark's inputs have no key lengths or bias");
    } else {
      auto aot_run = [&aot] {
        const Status status = mha_layer(aot.x, aot.p, aot.out, aot.options);
        if (!status.ok()) throw std::runtime_error(status.message);
      };
      if (correct(where, "aot_runtime", aot_run, in, spec.attention.dtype)) {
        names.push_back("aot_runtime");
        runs.push_back(aot_run);
        notes_.push_back(
            fmt::format("{} {} aot_runtime: {}", where.spec, where.shape, choice.function));
      }
    }
    OpenBlasLayer blas(spec);
    blas.set_num_threads(options_.threads);
    auto blas_run = [&] { blas.run(in, in.out.data(), shape.batch, shape.len); };
    if (correct(where, "openblas_layer", blas_run, in, spec.attention.dtype)) {
      names.push_back("openblas_layer");
      runs.push_back(blas_run);
    }
    const std::vector<Timing> timings = time_interleaved(runs, kRounds, timing());
    for (size_t n = 0; n < runs.size(); ++n) {
      add(where, names[n], timings[n], flops, naive_timing.median_ms);
    }
    if (!torch_.empty()) {
      TorchResult torch = run_torch_mha(torch_, spec, shape.batch, shape.len, options_.threads, in,
                                        options_.min_time);
      if (!torch.error.empty()) {
        skip(where, "torch_mha", torch.error);
      } else if (auto check = check_output(torch.output, in.expected, spec.attention.dtype);
                 !check.ok) {
        skip(where, "torch_mha", "output differs from the naive kernel's: " + check.detail);
      } else {
        add(where, "torch_mha", torch.timing, flops, naive_timing.median_ms);
      }
    }
  }

  void report(const std::string& command) const {
    fmt::print("target {}, {} threads, FMA peak {:.1f} GFLOP/s ({})\n", target_.to_string(),
               options_.threads, peak_.gflops, peak_.isa);
    print_rows(rows_);
    for (const std::string& line : notes_) fmt::print("{}\n", line);
    for (const std::string& line : skipped_) fmt::print("not timed: {}\n", line);
    if (torch_.empty())
      fmt::print("no PyTorch: no torch_mha rows (scripts/bootstrap --with-torch)\n");
    fmt::print("command: {}\n", command);
    if (!options_.json.empty()) write_rows_json(options_.json, rows_);
  }

 private:
  TimingOptions timing() const {
    TimingOptions t;
    t.min_seconds = options_.min_time;
    return t;
  }

  // Runs once on NaN-filled output and compares with the naive kernel's.
  bool correct(const BenchRow& where, const std::string& impl, const std::function<void()>& run,
               LayerInputs& in, DType dtype) {
    std::fill(in.out.begin(), in.out.end(), std::nanf(""));
    run();
    const autotune::CheckResult check = check_output(in.out, in.expected, dtype);
    if (!check.ok) skip(where, impl, "output differs from the naive kernel's: " + check.detail);
    return check.ok;
  }

  void add(BenchRow row, const std::string& impl, const Timing& t, double flops, double naive_ms) {
    row.impl = impl;
    row.ms_median = t.median_ms;
    row.ms_min = t.min_ms;
    row.ms_max = t.max_ms;
    row.gflops = flops / (t.median_ms * 1e6);
    row.pct_peak = 100.0 * row.gflops / peak_.gflops;
    row.speedup_vs_naive = naive_ms / t.median_ms;
    rows_.push_back(row);
  }

  void skip(const BenchRow& where, const std::string& impl, const std::string& reason) {
    skipped_.push_back(fmt::format("{} {} {}: {}", where.spec, where.shape, impl, reason));
  }

  Options options_;
  Halide::Target target_ = Halide::get_jit_target_from_environment();
  FmaPeak peak_;
  std::map<std::string, std::string> schedules_;
  TunedSchedules tuned_;
  std::string torch_;
  std::vector<BenchRow> rows_;
  std::vector<std::string> skipped_;
  std::vector<std::string> notes_;  // which package kernel the aot_runtime rows ran
};

int run_main(int argc, char** argv) {
  CLI::App app{"Times a multi-head attention layer: naive, schedules, OpenBLAS, PyTorch"};
  Options options;
  std::vector<std::string> extra;
  app.add_option("--json", options.json, "Write the rows as a JSON array to this file");
  app.add_option("--specs", options.specs, "Self-attention layer specs")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--lengths", options.lengths, "Sequence lengths")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", options.batch, "Batch size")->check(CLI::PositiveNumber);
  app.add_option("--threads", options.threads, "Threads")->check(CLI::PositiveNumber);
  app.add_option("--min-time", options.min_time, "Least total seconds of timed runs per row")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--db", options.db, "Tuning database whose layer winners run as 'tuned'");
  app.add_option("--schedule", extra, "Another row: NAME=schedule JSON (repeatable)");
  app.add_flag(
      "--no-presets", [&](int64_t) { options.presets = false; }, "No rows for the presets' forms");
  app.add_option("--torch", options.torch,
                 "Python with torch for the torch_mha rows: auto (the project's), none, or a path")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  for (const std::string& text : extra) {
    const size_t eq = text.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--schedule: expected NAME=JSON");
    options.schedules[text.substr(0, eq)] = text.substr(eq + 1);
  }
  if (!options.db.empty() && !std::filesystem::exists(options.db)) {
    throw std::invalid_argument("--db: " + options.db + " does not exist");
  }

  LayerBench bench(options);
  for (const std::string& text : options.specs) {
    const LayerSpec spec = LayerSpec::parse(text);
    for (int len : options.lengths) bench.run_case(spec, {options.batch, len});
  }
  bench.report(command_line(argc, argv));
  return 0;
}

}  // namespace
}  // namespace attnforge::bench

int main(int argc, char** argv) {
  try {
    return attnforge::bench::run_main(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_mha_layer: {}\n", error.what());
    return 1;
  }
}
