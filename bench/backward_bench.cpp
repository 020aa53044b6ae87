#include "bench/backward_bench.h"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>

#include "autotune/builder.h"
#include "autotune/checker.h"
#include "bench/fma_peak.h"
#include "bench/torch_peer.h"
#include "generators/jit_attention.h"
#include "generators/jit_attention_backward.h"
#include "schedules/backward_schedule.h"
#include "schedules/presets.h"
#include "schedules/schedule_check.h"

namespace attnforge::bench {

namespace {

using Tensor = Halide::Runtime::Buffer<float>;
using Stored = Halide::Runtime::Buffer<void>;  // in the spec's storage dtype

float bf16_value(float x) {  // x rounded to the nearest bf16, ties to even
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

Stored stored(const Tensor& values, DType dtype) {
  if (dtype == DType::f32) return Stored(values.copy());
  Halide::Runtime::Buffer<uint16_t> bits(values.width(), values.height(), values.channels(),
                                         values.dim(3).extent());
  bits.for_each_element([&](int d, int l, int h, int b) {
    const float x = values(d, l, h, b);
    uint32_t u;
    std::memcpy(&u, &x, 4);
    bits(d, l, h, b) = uint16_t(u >> 16);  // exact: the values are bf16 already
  });
  Stored typed(bits);
  typed.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16, 1);
  return typed;
}

Stored empty_like(const Tensor& shape, DType dtype) {
  const halide_type_t type = dtype == DType::f32 ? halide_type_t(halide_type_float, 32, 1)
                                                 : halide_type_t(halide_type_bfloat, 16, 1);
  return Stored(type, shape.width(), shape.height(), shape.channels(), shape.dim(3).extent());
}

// A stored tensor's values as f32, in its own (dense) order.
std::vector<float> values_of(const Stored& t) {
  std::vector<float> all;
  const size_t n = t.number_of_elements();
  if (t.type() == halide_type_t(halide_type_float, 32, 1)) {
    const float* data = static_cast<const float*>(t.data());
    return std::vector<float>(data, data + n);
  }
  const uint16_t* bits = static_cast<const uint16_t*>(t.data());
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(bits[i]) << 16;
    float x;
    std::memcpy(&x, &u, 4);
    all.push_back(x);
  }
  return all;
}

// One backward problem: random q, k, v and d_out (values the storage dtype
// holds, also kept in f32 for the torch peer), the forward's out and lse, and
// gradients for each implementation to write.
struct BackwardInputs {
  BackwardInputs(const AttentionSpec& spec, const Shape& shape)
      : dtype(spec.dtype),
        q(spec.head_dim, shape.q_len, spec.heads, shape.batch),
        k(spec.head_dim, shape.kv_len, spec.kv_heads, shape.batch),
        v(spec.head_dim, shape.kv_len, spec.kv_heads, shape.batch),
        d_out(spec.head_dim, shape.q_len, spec.heads, shape.batch),
        lse(shape.q_len, spec.heads, shape.batch) {
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (Tensor* t : {&q, &k, &v, &d_out}) {
      t->for_each_value([&](float& x) {
        x = uniform(rng);
        if (dtype == DType::bf16) x = bf16_value(x);
      });
    }
    stored_q = stored(q, dtype);
    stored_k = stored(k, dtype);
    stored_v = stored(v, dtype);
    stored_d_out = stored(d_out, dtype);
    out = empty_like(q, dtype);
    scale = default_scale(spec.head_dim);
  }

  // The arguments of a call writing into `g` (dq, dk, dv).
  BackwardArguments arguments(std::vector<Stored>& g) {
    BackwardArguments a;
    a.q = stored_q.raw_buffer();
    a.k = stored_k.raw_buffer();
    a.v = stored_v.raw_buffer();
    a.out = out.raw_buffer();
    a.d_out = stored_d_out.raw_buffer();
    a.lse = lse.raw_buffer();
    a.scale = scale;
    a.dq = g[0].raw_buffer();
    a.dk = g[1].raw_buffer();
    a.dv = g[2].raw_buffer();
    return a;
  }
  std::vector<Stored> gradients() const {
    return {empty_like(q, dtype), empty_like(k, dtype), empty_like(v, dtype)};
  }

  DType dtype;
  Tensor q, k, v, d_out, lse;
  Stored stored_q, stored_k, stored_v, stored_d_out, out;
  float scale = 1.0f;
};

// dq, dk and dv one after another, as the torch peer returns them.
std::vector<float> joined(const std::vector<Stored>& g) {
  std::vector<float> all;
  for (const Stored& t : g) {
    const std::vector<float> values = values_of(t);
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

// The forward's out and lse, from the online preset of the host's lanes.
void run_forward(const AttentionSpec& spec, BackwardInputs& in) {
  AttentionSpec with_lse = spec;
  with_lse.return_lse = true;
  const Halide::Target host = Halide::get_host_target();
  std::string preset = "naive";
  for (const char* name : {"online_avx512", "online_avx2"}) {
    if (!schedules::check(schedules::load_preset(name), with_lse, host)) {
      preset = name;
      break;
    }
  }
  JitAttention forward(with_lse, host, {{"schedule", preset}});
  KernelArguments args;
  args.q = in.stored_q.raw_buffer();
  args.k = in.stored_k.raw_buffer();
  args.v = in.stored_v.raw_buffer();
  args.scale = in.scale;
  args.out = in.out.raw_buffer();
  args.lse = in.lse.raw_buffer();
  forward.run(args);
}

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
      if (spec.dtype == DType::f16 || spec.return_lse) {
        throw std::invalid_argument("--backward: " + text +
                                    ": f32 or bf16 specs without .lse, for now");
      }
      BackwardInputs in(spec, shape);
      run_forward(spec, in);
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
        std::vector<Stored> g = in.gradients();
        BackwardArguments args = in.arguments(g);
        impl.kernel->run(args);
        if (naive_gradients.empty()) {
          naive_gradients = joined(g);
        } else if (auto check = autotune::check_output(joined(g), naive_gradients, spec.dtype);
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
      if (!options.torch_python.empty()) {
        const TorchResult torch = run_torch_sdpa_backward(
            options.torch_python, spec, shape, options.threads,
            {in.q.data(), in.k.data(), in.v.data(), in.d_out.data(), in.scale},
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
