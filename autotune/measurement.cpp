#include "measurement.h"

#include <fstream>
#include <functional>
#include <memory>

#include "checker.h"
#include "cuda_screen.h"
#include "layer_tuning_inputs.h"
#include "tuning_inputs.h"

namespace attnforge::autotune {

namespace {

// A compiled kernel and its inputs, ready to run in a measuring child.
struct ReadyKernel {
  Status status = Status::ok;  // of the build; run and the rest are set only when ok
  std::string detail;
  std::function<void()> run;
  std::function<std::vector<float>()> output;
  std::function<void()> clear_output;
};

template <typename Kernel, typename Inputs>
ReadyKernel ready(std::unique_ptr<Kernel> built, std::shared_ptr<Inputs> inputs) {
  std::shared_ptr<Kernel> kernel = std::move(built);
  return {Status::ok, "", [kernel, inputs] { kernel->run(inputs->arguments()); },
          [inputs] { return inputs->output(); }, [inputs] { inputs->clear_output(); }};
}

ReadyKernel ready_attention(JitBuild build, const TuneOptions& o) {
  if (build.status != Status::ok) return {build.status, build.detail};
  return ready(std::move(build.kernel), std::make_shared<TuningInputs>(o.spec, o.shape, o.seed));
}

// The run's attention or layer under `schedule` ("naive", a preset name or
// JSON); naive on the reference target.
ReadyKernel ready_kernel(const TuneOptions& o, const std::string& schedule) {
  if (!o.layer) {
    const Halide::Target target =
        schedule == "naive" ? reference_target(o.spec, o.target) : o.target;
    return ready_attention(build_jit({o.spec, target, schedule}), o);
  }
  JitLayerBuild build = build_jit_layer(*o.layer, o.target, schedule);
  if (build.status != Status::ok) return {build.status, build.detail};
  return ready(std::move(build.kernel),
               std::make_shared<LayerTuningInputs>(*o.layer, o.shape, o.seed));
}

std::vector<float> read_expected(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), values.size() * sizeof(float));
  return values;
}

// Runs once on NaN-filled output and compares with the reference; then times.
Outcome check_and_time(const TuneOptions& options, const std::filesystem::path& expected_path,
                       const ReadyKernel& kernel, MeasurementGate& gate) {
  if (kernel.status != Status::ok) return Outcome{kernel.status, 0, 0, 0, kernel.detail};
  gate.enter();
  JitAttention::set_num_threads(options.threads);
  kernel.clear_output();
  kernel.run();
  CheckResult check =
      check_output(kernel.output(), read_expected(expected_path), options.spec.dtype);
  if (!check.ok) return Outcome{Status::wrong, 0, 0, 0, check.detail};
  return time_runs(kernel.run, options.min_measure_seconds, 30);
}

}  // namespace

Halide::Target reference_target(const AttentionSpec& spec, const Halide::Target& target) {
  if (naive_runs_on(spec, target)) return target;
  return Halide::get_host_target();
}

bool naive_runs_on(const AttentionSpec& spec, const Halide::Target& target) {
  return !(spec.dtype == DType::bf16 && target.has_feature(Halide::Target::CUDA));
}

Job Measurement::baseline(bool timed) const {
  return [this, timed](MeasurementGate& gate) {
    ReadyKernel kernel = ready_kernel(options_, "naive");
    if (kernel.status != Status::ok) return Outcome{kernel.status, 0, 0, 0, kernel.detail};
    gate.enter();
    JitAttention::set_num_threads(options_.threads);
    kernel.run();
    std::vector<float> out = kernel.output();
    std::ofstream(expected_path_, std::ios::binary)
        .write(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float));
    if (!timed || (!options_.layer && !naive_runs_on(options_.spec, options_.target))) {
      return Outcome{};
    }
    return time_runs(kernel.run, options_.min_measure_seconds, 30);
  };
}

Job Measurement::autoscheduled(const HalideAutoscheduler& autoscheduler) const {
  return [this, autoscheduler](MeasurementGate& gate) {
    return check_and_time(
        options_, expected_path_,
        ready_attention(build_jit(autoscheduled_candidate(
                            options_.spec, options_.target, autoscheduler, options_.shape.batch,
                            options_.shape.q_len, options_.shape.kv_len)),
                        options_),
        gate);
  };
}

Job Measurement::candidate(const schedules::Schedule& schedule) const {
  std::string json = schedule.to_json().dump();
  return [this, json](MeasurementGate& gate) {
    if (options_.target.has_feature(Halide::Target::CUDA) && !options_.layer) {
      if (auto why = cuda_screen(options_.spec, json, options_.target)) {
        return Outcome{Status::invalid, 0, 0, 0, *why};
      }
    }
    return check_and_time(options_, expected_path_, ready_kernel(options_, json), gate);
  };
}

}  // namespace attnforge::autotune
