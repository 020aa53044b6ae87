#include "bench/backward_bench.h"

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <stdexcept>

#include "autotune/backward_problem.h"
#include "autotune/builder.h"
#include "autotune/checker.h"
#include "bench/fma_peak.h"
#include "bench/openblas_backward.h"
#include "bench/torch_peer.h"
#include "generators/jit_attention.h"
#include "generators/jit_attention_backward.h"
#include "schedules/backward_schedule.h"
#include "schedules/presets.h"
#include "schedules/schedule_check.h"

namespace attnforge::bench {

void run_forward_with_lse(const AttentionSpec& spec, autotune::BackwardProblem& in) {
  const AttentionSpec with_lse = forward_spec_of(spec);
  const Halide::Target host = Halide::get_host_target();
  std::string preset = "naive";
  for (const char* name : {"online_avx512", "online_avx2"}) {
    if (!schedules::check(schedules::load_preset(name), with_lse, host)) {
      preset = name;
      break;
    }
  }
  JitAttention forward(with_lse, host, {{"schedule", preset}});
  forward.run(in.forward_arguments());
}

namespace {

// The backward schedules timed, as (row name, Generator `schedule`): the
// presets asked for (or every one the host runs), then the JSON ones.
std::vector<std::pair<std::string, std::string>> backward_schedules(
    const BackwardBenchOptions& options, const AttentionSpec& spec, const Halide::Target& host) {
  std::vector<std::pair<std::string, std::string>> chosen;
  if (options.presets) {
    const bool every = options.preset_names.empty();
    for (const std::string& name :
         every ? schedules::backward_preset_names() : options.preset_names) {
      auto misfit = schedules::check_backward(schedules::load_backward_preset(name), spec, host);
      if (misfit && !every) throw *misfit;
      if (!misfit) chosen.emplace_back(name, name);
    }
  }
  for (size_t n = 0; n < options.schedules.size(); ++n) {
    chosen.emplace_back(fmt::format("schedule {}", n + 1), options.schedules[n]);
  }
  return chosen;
}

struct Implementation {
  std::string name;
  std::unique_ptr<JitAttentionBackward> kernel;
};

// OpenBLAS's unfused backward on the problem's dense f32 copies, checked
// against the naive gradients, then timed.
void add_openblas_row(const AttentionSpec& spec, const Shape& shape, autotune::BackwardProblem& in,
                      const std::vector<float>& expected, const BackwardBenchOptions& options,
                      const std::function<void(const Timing&)>& add_row) {
  std::unique_ptr<OpenBlasBackward> blas;
  try {
    blas = std::make_unique<OpenBlasBackward>(spec);
  } catch (const std::invalid_argument& error) {
    fmt::print(stderr, "  skipped openblas_unfused: {}\n", error.what());
    return;
  }
  blas->set_num_threads(options.threads);
  const BackwardArguments& a = in.arguments();
  const std::vector<float> q = in.as_f32(a.q), k = in.as_f32(a.k), v = in.as_f32(a.v),
                           out = in.as_f32(a.out), d_out = in.as_f32(a.d_out);
  std::vector<float> gradients(q.size() + 2 * k.size());
  float* dq = gradients.data();
  float* dk = dq + q.size();
  float* dv = dk + k.size();
  auto run = [&] {
    blas->run({q.data(), k.data(), v.data(), out.data(), d_out.data(), dq, dk, dv}, shape.batch,
              shape.q_len, shape.kv_len, a.scale);
  };
  run();
  if (auto check = autotune::check_output(gradients, expected, spec.dtype); !check.ok) {
    fmt::print(stderr, "  skipped openblas_unfused: gradients differ from naive's: {}\n",
               check.detail);
    return;
  }
  add_row(time_runs(run, options.timing));
}

}  // namespace

std::vector<BenchRow> run_backward_bench(const BackwardBenchOptions& options) {
  const Halide::Target host = Halide::get_host_target();
  JitAttention::set_num_threads(options.threads);
  const FmaPeak peak = measure_fma_peak(options.threads);
  fmt::print("FMA peak, {} threads: {:.1f} GFLOP/s ({})\n", options.threads, peak.gflops, peak.isa);
  std::vector<BenchRow> rows;
  for (const Shape& shape : options.shapes) {
    std::vector<std::string> specs = options.specs;
    if (specs.empty()) {
      for (const char* mask : {"full", "causal"}) {
        specs.push_back(fmt::format("{}.mha{}.d{}.f32", mask, shape.heads, shape.head_dim));
      }
    }
    for (const std::string& text : specs) {
      const AttentionSpec spec = AttentionSpec::parse(text);
      if (spec.return_lse) {
        throw std::invalid_argument("--backward: " + text + ": the backward's spec has no .lse");
      }
      autotune::BackwardProblem in(spec, {shape.batch, shape.q_len, shape.kv_len}, 17);
      run_forward_with_lse(spec, in);
      const std::map<std::string, std::string> estimates = {
          {"estimate_batch", std::to_string(shape.batch)},
          {"estimate_q_len", std::to_string(shape.q_len)},
          {"estimate_kv_len", std::to_string(shape.kv_len)}};
      std::vector<Implementation> impls;
      impls.push_back({"naive", std::make_unique<JitAttentionBackward>(spec, host)});
      for (const auto& [name, schedule] : backward_schedules(options, spec, host)) {
        impls.push_back(
            {name, std::make_unique<JitAttentionBackward>(
                       spec, host, std::map<std::string, std::string>{{"schedule", schedule}})});
      }
      if (options.autoschedulers) {
        for (const autotune::HalideAutoscheduler& a :
             autotune::x86_autoschedulers(options.threads)) {
          try {
            Halide::load_plugin(a.plugin);
            std::map<std::string, std::string> params = estimates;
            params["schedule"] = "auto";
            impls.push_back(
                {a.name, std::make_unique<JitAttentionBackward>(
                             spec, host, params, Halide::AutoschedulerParams(a.name, a.params))});
          } catch (const std::exception& error) {
            fmt::print(stderr, "  skipped {}: {}\n", a.name, error.what());
          }
        }
      }
      const double flops = 2.5 * attention_flops(spec, shape.batch, shape.q_len, shape.kv_len);
      const std::string label =
          shape_label(shape.batch, spec.heads, shape.q_len, shape.kv_len, spec.head_dim);
      auto row = [&](const std::string& impl, const Timing& t, double naive_ms) {
        BenchRow r;
        r.spec = text + " backward";
        r.shape = label;
        r.impl = impl;
        r.threads = options.threads;
        r.ms_median = t.median_ms;
        r.ms_min = t.min_ms;
        r.ms_max = t.max_ms;
        r.gflops = flops / (t.median_ms * 1e6);
        r.pct_peak = 100.0 * r.gflops / peak.gflops;
        r.speedup_vs_naive = naive_ms > 0 ? naive_ms / t.median_ms : 1.0;
        return r;
      };
      std::vector<float> naive_gradients;
      double naive_ms = 0.0;
      for (Implementation& impl : impls) {
        BackwardArguments& args = in.arguments();
        in.clear_gradients();
        impl.kernel->run(args);
        if (naive_gradients.empty()) {
          naive_gradients = in.gradients();
        } else if (auto check = autotune::check_output(in.gradients(), naive_gradients, spec.dtype);
                   !check.ok) {
          fmt::print(stderr, "  skipped {}: gradients differ from naive's: {}\n", impl.name,
                     check.detail);
          continue;
        }
        const Timing t = time_runs([&] { impl.kernel->run(args); }, options.timing);
        if (naive_ms == 0.0) naive_ms = t.median_ms;
        rows.push_back(row(impl.name, t, naive_ms));
        fmt::print(stderr, "  {} {}: {:.3f} ms\n", text, impl.name, t.median_ms);
      }
      add_openblas_row(spec, shape, in, naive_gradients, options, [&](const Timing& t) {
        rows.push_back(row("openblas_unfused", t, naive_ms));
      });
      if (!options.torch_python.empty()) {
        const BackwardArguments& a = in.arguments();
        const std::vector<float> q = in.as_f32(a.q), k = in.as_f32(a.k), v = in.as_f32(a.v),
                                 d_out = in.as_f32(a.d_out);
        const TorchResult torch = run_torch_sdpa_backward(
            options.torch_python, spec, shape, options.threads,
            {q.data(), k.data(), v.data(), d_out.data(), in.arguments().scale},
            options.timing.min_seconds);
        if (!torch.error.empty()) {
          fmt::print(stderr, "  skipped torch_sdpa_backward: {}\n", torch.error);
        } else if (auto check = autotune::check_output(torch.output, naive_gradients, spec.dtype);
                   !check.ok) {
          fmt::print(stderr, "  skipped torch_sdpa_backward: gradients differ: {}\n", check.detail);
        } else {
          rows.push_back(row("torch_sdpa_backward", torch.timing, naive_ms));
        }
      }
    }
  }
  return rows;
}

}  // namespace attnforge::bench
