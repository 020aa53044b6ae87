// The CUDA benchmark: per spec and shape, the naive baseline, the CUDA
// presets, the tuned schedule (from --db), Halide's GPU autoschedulers
// (Anderson2021, Li2018), the cuBLAS unfused baseline and, with --torch-python,
// PyTorch's scaled_dot_product_attention with each CUDA backend. Every output
// is checked against the naive kernel's before it is timed; a wrong one makes
// the exit status 1. Percent of peak is of the fp32 or f16 FMA peak measured
// in the same run. Exit status 77: no CUDA device. With an OpenCL target
// (e.g. host-opencl on pocl, a CPU device) it runs the same schedules without
// the CUDA peers and peaks: a check of the benchmark itself, not a measurement.
// With --backward, the backward pass instead (bench/cuda_backward_case.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "algorithm/attention_terms.h"
#include "autotune/builder.h"
#include "autotune/checker.h"
#include "autotune/measurement.h"
#include "autotune/tuning_inputs.h"
#include "bench/bench_rows.h"
#include "bench/bench_shapes.h"
#include "bench/cuda/cublas_attention.h"
#include "bench/cuda/gpu_info.h"
#include "bench/cuda_backward_case.h"
#include "bench/timing.h"
#include "bench/torch_peer.h"
#include "bench/tuned_schedules.h"
#include "schedules/space.h"

namespace attnforge::bench {
namespace {

using autotune::TuningInputs;

struct Options {
  bool quick = false;
  bool autoschedulers = true;
  bool backward = false;
  std::string db, json_path, gpu_json_path, torch_python;
  std::string target = "host-cuda-cuda_capability_80";
  std::vector<std::string> specs;
  int length = 0;  // 0: the default for --quick or not
  int q_len = 0;   // 0: as many query rows as keys
  double min_seconds = 0.3;
};

// One implementation of a case: how to run it once (returning when its
// output is written) and read that output back as f32.
struct Impl {
  std::string name;
  std::function<void()> run;
  std::function<std::vector<float>()> output;
  std::function<void()> clear = [] {};
  std::shared_ptr<void> keep;  // what run needs alive
};

// The naive kernel could not run: no device for the target.
struct NoDevice : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Counts {
  int wrong = 0;
};

class CudaBench {
 public:
  CudaBench(Options options, GpuPeaks peaks) : o_(std::move(options)), peaks_(peaks) {
    if (!o_.db.empty()) tuned_ = tuned_schedules(o_.db, target_.to_string());
  }

  void run_case(const AttentionSpec& spec, const Shape& shape) {
    const std::string label =
        shape_label(shape.batch, spec.heads, shape.q_len, shape.kv_len, spec.head_dim);
    fmt::print("== {} {}\n", spec.to_string(), label);
    std::fflush(stdout);
    auto inputs = std::make_shared<TuningInputs>(
        spec, autotune::TuningShape{shape.batch, shape.q_len, shape.kv_len}, 1);
    std::vector<Impl> impls;
    // The reference: naive on the target, or on the CPU where no naive
    // kernel takes the spec (bf16 on CUDA); then it is neither timed nor a baseline.
    const bool naive_here = autotune::naive_runs_on(spec, target_);
    add_jit(impls, spec, inputs, "naive",
            {spec, autotune::reference_target(spec, target_), "naive"});
    if (impls.empty()) return;  // skipped: the naive kernel did not build
    try {
      impls[0].run();
    } catch (const KernelError& error) {
      throw NoDevice(error.what());  // the naive kernel runs wherever a device does
    }
    const std::vector<float> expected = impls[0].output();
    if (!naive_here) {
      impls.clear();
      skip(spec, label, "naive",
           "no CUDA kernel but the tensor-core form takes bf16: the reference ran on the CPU, "
           "and x naive is 0");
    }

    for (const std::string& name : schedules::presets_for(target_)) {
      add_jit(impls, spec, inputs, name, {spec, target_, name});
    }
    if (auto tuned =
            tuned_schedule_for(tuned_, spec.to_string(), shape.batch, shape.q_len, shape.kv_len)) {
      add_jit(impls, spec, inputs, "tuned", {spec, target_, *tuned});
    }
    if (o_.autoschedulers) {
      for (const auto& a : autotune::autoschedulers_for(target_, 1)) {
        add_jit(impls, spec, inputs, "autoscheduler:" + a.name,
                autotune::autoscheduled_candidate(spec, target_, a, shape.batch, shape.q_len,
                                                  shape.kv_len));
      }
    }
    if (cuda_) add_cublas(impls, spec, shape, *inputs);

    std::vector<Impl> correct;
    for (Impl& impl : impls) {
      fmt::print("checking {}\n", impl.name);  // names the culprit of a crash
      std::fflush(stdout);
      impl.clear();
      impl.run();
      autotune::CheckResult check = autotune::check_output(impl.output(), expected, spec.dtype);
      if (check.ok) {
        correct.push_back(impl);
      } else {
        ++counts_.wrong;
        skip(spec, label, impl.name, "WRONG: " + check.detail);
      }
    }
    std::vector<std::function<void()>> runs;
    for (const Impl& impl : correct) runs.push_back(impl.run);
    TimingOptions timing;
    timing.min_seconds = o_.min_seconds;
    if (runs.empty()) return;
    const std::vector<Timing> times = time_interleaved(runs, 4, timing);
    const double naive_ms = naive_here ? times[0].median_ms : 0.0;
    for (size_t n = 0; n < correct.size(); ++n) {
      add_row(spec, shape, label, correct[n].name, times[n], naive_ms);
    }
    if (cuda_) run_torch(spec, shape, label, *inputs, expected, naive_ms);
  }

  void report(const GpuInfo& gpu, const std::string& command) const {
    print_rows(rows_);
    for (const auto& [where, why] : skipped_) fmt::print("not timed: {}: {}\n", where, why);
    fmt::print("{} rows, {} wrong\ncommand: {}\n", rows_.size(), counts_.wrong, command);
    if (!o_.json_path.empty()) write_rows_json(o_.json_path, rows_);
    if (!o_.gpu_json_path.empty()) {
      nlohmann::ordered_json json = {{"gpu", gpu.name},
                                     {"multiprocessors", gpu.multiprocessors},
                                     {"compute_capability", gpu.compute_capability},
                                     {"fp32_peak_tflops", peaks_.fp32_tflops},
                                     {"f16_peak_tflops", peaks_.f16_tflops},
                                     {"read_bandwidth_gbps", peaks_.read_gbps},
                                     {"target", target_.to_string()},
                                     {"wrong_results", counts_.wrong},
                                     {"command", command}};
      std::ofstream(o_.gpu_json_path) << json.dump(1) << "\n";
    }
  }

  // bench/cuda_backward_case.h's rows.
  void run_backward_case(const AttentionSpec& spec, const Shape& shape) {
    fmt::print("== {} backward {}\n", spec.to_string(),
               shape_label(shape.batch, spec.heads, shape.q_len, shape.kv_len, spec.head_dim));
    std::fflush(stdout);
    GpuBackwardResult result;
    try {
      result =
          run_gpu_backward_case(spec, shape, {target_, peaks_, o_.torch_python, o_.min_seconds});
    } catch (const KernelError& error) {
      throw NoDevice(error.what());
    }
    rows_.insert(rows_.end(), result.rows.begin(), result.rows.end());
    skipped_.insert(skipped_.end(), result.skipped.begin(), result.skipped.end());
    counts_.wrong += result.wrong;
  }

  int wrong() const { return counts_.wrong; }

 private:
  void skip(const AttentionSpec& spec, const std::string& label, const std::string& impl,
            const std::string& why) {
    skipped_.push_back({fmt::format("{} {} {}", spec.to_string(), label, impl), why});
  }

  void add_jit(std::vector<Impl>& impls, const AttentionSpec& spec,
               const std::shared_ptr<TuningInputs>& inputs, const std::string& name,
               const autotune::Candidate& candidate) {
    autotune::JitBuild build = autotune::build_jit(candidate);
    if (build.status != autotune::Status::ok) {
      skip(spec, "", name, "not built: " + build.detail.substr(0, 200));
      return;
    }
    std::shared_ptr<JitAttention> kernel = std::move(build.kernel);
    Impl impl;
    impl.name = name;
    impl.run = [kernel, inputs] { kernel->run(inputs->arguments()); };
    impl.output = [inputs] { return inputs->output(); };
    impl.clear = [inputs] { inputs->clear_output(); };
    impl.keep = kernel;
    impls.push_back(impl);
  }

  void add_cublas(std::vector<Impl>& impls, const AttentionSpec& spec, const Shape& shape,
                  TuningInputs& inputs) {
    const std::string why = CublasAttention::unsupported(spec);
    if (!why.empty()) {
      skip(spec, "", "cublas_unfused", why);
      return;
    }
    KernelArguments& a = inputs.arguments();
    std::shared_ptr<CublasAttention> peer;
    try {
      peer = std::make_shared<CublasAttention>(spec, shape.batch, shape.q_len, shape.kv_len,
                                               a.scale, a.q->host, a.k->host, a.v->host);
    } catch (const std::exception& error) {
      skip(spec, "", "cublas_unfused", error.what());
      return;
    }
    impls.push_back({"cublas_unfused", [peer] { peer->run(); }, [peer] { return peer->output(); },
                     [] {}, peer});
  }

  void run_torch(const AttentionSpec& spec, const Shape& shape, const std::string& label,
                 TuningInputs& inputs, const std::vector<float>& expected, double naive_ms) {
    if (o_.torch_python.empty()) return;
    if (!python_has_torch(o_.torch_python)) {
      skip(spec, label, "torch", o_.torch_python + " cannot import torch");
      return;
    }
    KernelArguments& a = inputs.arguments();
    const std::vector<float> q = inputs.as_f32(a.q), k = inputs.as_f32(a.k), v = inputs.as_f32(a.v);
    const TorchCudaInputs files{q.data(), k.data(), v.data(), a.scale};
    const std::vector<std::string> backends = {"math", "efficient", "flash", "cudnn"};
    const std::vector<TorchResult> results =
        run_torch_sdpa_cuda(o_.torch_python, spec, shape, files, backends, o_.min_seconds);
    for (size_t n = 0; n < backends.size(); ++n) {
      const std::string name = "torch_" + backends[n];
      const TorchResult& r = results[n];
      if (!r.error.empty()) {
        skip(spec, label, name, r.error);
        continue;
      }
      autotune::CheckResult check = autotune::check_output(r.output, expected, spec.dtype);
      if (check.ok) {
        add_row(spec, shape, label, name, r.timing, naive_ms);
      } else {
        skip(spec, label, name, "its output differs: " + check.detail);
      }
    }
  }

  void add_row(const AttentionSpec& spec, const Shape& shape, const std::string& label,
               const std::string& impl, const Timing& t, double naive_ms) {
    BenchRow row;
    row.spec = spec.to_string();
    row.shape = label;
    row.impl = impl;
    row.threads = 0;  // a GPU
    row.ms_median = t.median_ms;
    row.ms_min = t.min_ms;
    row.ms_max = t.max_ms;
    row.gflops =
        attention_flops(spec, shape.batch, shape.q_len, shape.kv_len) / (t.median_ms * 1e6);
    const double peak = spec.dtype == DType::f32 ? peaks_.fp32_tflops : peaks_.f16_tflops;
    row.pct_peak = peak > 0 ? 100.0 * row.gflops / (peak * 1e3) : 0.0;
    row.speedup_vs_naive = naive_ms / t.median_ms;
    if (shape.q_len <= kMemoryBoundQueries && peaks_.read_gbps > 0) {
      const double gbps =
          attention_bytes(spec, shape.batch, shape.q_len, shape.kv_len) / (t.median_ms * 1e6);
      row.pct_bandwidth = 100.0 * gbps / peaks_.read_gbps;
    }
    rows_.push_back(row);
  }

  Options o_;
  GpuPeaks peaks_;
  Halide::Target target_{o_.target};
  bool cuda_ = target_.has_feature(Halide::Target::CUDA);
  TunedSchedules tuned_;
  std::vector<BenchRow> rows_;
  std::vector<std::pair<std::string, std::string>> skipped_;
  Counts counts_;
};

// The shapes: B1 H16 L4096 at D64 and D128, f32 and f16, plus causal
// and GQA; --quick: two small ones.
std::vector<std::string> default_specs(bool quick) {
  if (quick) return {"full.mha8.d64.f32", "causal.gqa8x2.d64.f16"};
  return {"full.mha16.d64.f32",  "full.mha16.d128.f32",  "full.mha16.d64.f16",
          "full.mha16.d128.f16", "causal.mha16.d64.f32", "causal.br.gqa16x4.d128.f16"};
}

}  // namespace
}  // namespace attnforge::bench

int main(int argc, char** argv) {
  using namespace attnforge;
  using namespace attnforge::bench;
  Options o;
  CLI::App app{"The CUDA attention benchmark"};
  app.add_flag("--quick", o.quick, "two small cases");
  app.add_flag("--backward", o.backward,
               "the backward pass: the GPU backward presets and PyTorch's SDPA backward");
  app.add_option("--db", o.db, "a tuning database: its CUDA winners are timed as 'tuned'");
  app.add_option("--json", o.json_path, "write the rows here");
  app.add_option("--gpu-json", o.gpu_json_path, "write the GPU's name and measured peaks here");
  app.add_option("--torch-python", o.torch_python, "a Python with PyTorch for its SDPA backends");
  app.add_option("--target", o.target, "the Halide CUDA target")->capture_default_str();
  app.add_option("--specs", o.specs, "only these specs");
  app.add_option("--length", o.length, "sequence length (default 4096, 1024 with --quick)");
  app.add_option("--q-len", o.q_len,
                 "query rows, e.g. 1 for decoding over --length keys (default: --length)");
  app.add_option("--min-time", o.min_seconds, "seconds of timed runs per implementation")
      ->capture_default_str();
  bool no_autoschedulers = false;
  app.add_flag("--no-autoschedulers", no_autoschedulers, "skip Halide's autoschedulers");
  CLI11_PARSE(app, argc, argv);
  o.autoschedulers = !no_autoschedulers;

  const bool cuda = Halide::Target(o.target).has_feature(Halide::Target::CUDA);
  GpuInfo gpu = cuda ? gpu_info() : GpuInfo{true, "", "OpenCL device (" + o.target + ")"};
  if (!gpu.available) {
    fmt::print(stderr, "bench_cuda: no CUDA device ({})\n", gpu.why);
    return 77;
  }
  try {
    GpuPeaks peaks;
    try {
      if (cuda) peaks = measure_gpu_peaks();
    } catch (const std::exception& error) {
      fmt::print(stderr, "bench_cuda: no peaks measured (percent of peak reads 0): {}\n",
                 error.what());
    }
    if (cuda) {
      fmt::print(
          "GPU: {} ({} SMs, sm_{}); peaks: fp32 {:.1f} TFLOP/s, f16 {:.1f} TFLOP/s, read {:.0f} "
          "GB/s\n",
          gpu.name, gpu.multiprocessors, gpu.compute_capability, peaks.fp32_tflops,
          peaks.f16_tflops, peaks.read_gbps);
    } else {
      fmt::print("{}: no CUDA peers or peaks\n", gpu.name);
    }
    const std::vector<std::string> specs = o.specs.empty() ? default_specs(o.quick) : o.specs;
    const int length = o.length > 0 ? o.length : (o.quick ? 1024 : 4096);
    CudaBench bench(o, peaks);
    for (const std::string& text : specs) {
      const AttentionSpec spec = AttentionSpec::parse(text);
      const int q_len = o.q_len > 0 ? o.q_len : length;
      const Shape shape{1, spec.heads, q_len, length, spec.head_dim};
      if (o.backward) {
        bench.run_backward_case(spec, shape);
      } else {
        bench.run_case(spec, shape);
      }
    }
    bench.report(gpu, command_line(argc, argv));
    return bench.wrong() > 0 ? 1 : 0;
  } catch (const NoDevice& error) {
    fmt::print(stderr, "bench_cuda: no device runs the naive kernel: {}\n", error.what());
    return 77;
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_cuda: {}\n", error.what());
    return 2;
  }
}
