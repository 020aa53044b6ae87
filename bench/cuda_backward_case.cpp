#include "bench/cuda_backward_case.h"

#include <fmt/format.h>

#include <functional>
#include <memory>

#include "autotune/backward_problem.h"
#include "autotune/checker.h"
#include "bench/backward_bench.h"
#include "bench/torch_peer.h"
#include "generators/jit_attention_backward.h"
#include "schedules/backward_schedule.h"

namespace attnforge::bench {

namespace {

// A GPU kernel leaves its gradients on the device.
void copy_gradients_to_host(BackwardArguments& args) {
  for (halide_buffer_t* gradient : {args.dq, args.dk, args.dv}) {
    if (gradient->device && gradient->device_interface) {
      gradient->device_interface->copy_to_host(nullptr, gradient);
    }
  }
}

// The CPU's gradients to check against: a backward preset the host runs
// (each checked against the double reference in the tests), else naive,
// which takes minutes at the benchmark's lengths.
std::string reference_schedule(const AttentionSpec& spec, const Halide::Target& host) {
  for (const std::string& name : schedules::backward_preset_names()) {
    if (!schedules::check_backward(schedules::load_backward_preset(name), spec, host)) return name;
  }
  return "naive";
}

}  // namespace

GpuBackwardResult run_gpu_backward_case(const AttentionSpec& spec, const Shape& shape,
                                        const GpuBackwardOptions& options) {
  GpuBackwardResult result;
  const std::string label =
      shape_label(shape.batch, spec.heads, shape.q_len, shape.kv_len, spec.head_dim);
  const std::string where = spec.to_string() + " backward " + label;
  const Halide::Target host = Halide::get_host_target();
  autotune::BackwardProblem in(spec, {shape.batch, shape.q_len, shape.kv_len}, 17);
  run_forward_with_lse(spec, in);
  JitAttentionBackward(spec, host, {{"schedule", reference_schedule(spec, host)}})
      .run(in.arguments());
  const std::vector<float> expected = in.gradients();

  struct Impl {
    std::string name;
    std::function<void()> run;
  };
  std::vector<Impl> impls;
  for (const std::string& name : schedules::backward_preset_names()) {
    if (auto misfit = schedules::check_backward(schedules::load_backward_preset(name), spec,
                                                options.target)) {
      continue;
    }
    auto kernel = std::make_shared<JitAttentionBackward>(
        spec, options.target, std::map<std::string, std::string>{{"schedule", name}});
    BackwardArguments& args = in.arguments();
    in.clear_gradients();
    kernel->run(args);
    copy_gradients_to_host(args);
    if (auto check = autotune::check_output(in.gradients(), expected, spec.dtype); !check.ok) {
      ++result.wrong;
      result.skipped.push_back({where + " " + name, "WRONG: " + check.detail});
      continue;
    }
    impls.push_back({name, [kernel, &args] { kernel->run(args); }});
  }
  std::vector<std::function<void()>> runs;
  for (const Impl& impl : impls) runs.push_back(impl.run);
  TimingOptions timing;
  timing.min_seconds = options.min_seconds;
  const std::vector<Timing> times =
      runs.empty() ? std::vector<Timing>{} : time_interleaved(runs, 4, timing);

  const double flops = 2.5 * attention_flops(spec, shape.batch, shape.q_len, shape.kv_len);
  const double peak =
      spec.dtype == DType::f32 ? options.peaks.fp32_tflops : options.peaks.f16_tflops;
  auto add_row = [&](const std::string& name, const Timing& t) {
    BenchRow row;
    row.spec = spec.to_string() + " backward";
    row.shape = label;
    row.impl = name;
    row.threads = 0;  // a GPU
    row.ms_median = t.median_ms;
    row.ms_min = t.min_ms;
    row.ms_max = t.max_ms;
    row.gflops = flops / (t.median_ms * 1e6);
    row.pct_peak = peak > 0 ? 100.0 * row.gflops / (peak * 1e3) : 0.0;
    result.rows.push_back(row);
  };
  for (size_t n = 0; n < impls.size(); ++n) add_row(impls[n].name, times[n]);

  if (!options.torch_python.empty() && options.target.has_feature(Halide::Target::CUDA)) {
    const BackwardArguments& a = in.arguments();
    const std::vector<float> q = in.as_f32(a.q), k = in.as_f32(a.k), v = in.as_f32(a.v),
                             d_out = in.as_f32(a.d_out);
    const TorchResult torch = run_torch_sdpa_backward(
        options.torch_python, spec, shape, 1,
        {q.data(), k.data(), v.data(), d_out.data(), a.scale, "cuda"}, options.min_seconds);
    if (!torch.error.empty()) {
      result.skipped.push_back({where + " torch_sdpa_backward", torch.error});
    } else if (auto check = autotune::check_output(torch.output, expected, spec.dtype); !check.ok) {
      result.skipped.push_back(
          {where + " torch_sdpa_backward", "gradients differ: " + check.detail});
    } else {
      add_row("torch_sdpa_backward", torch.timing);
    }
  }
  return result;
}

}  // namespace attnforge::bench
