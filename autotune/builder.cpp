#include "builder.h"

#include "schedules/schedule.h"

namespace attnforge::autotune {

namespace {

std::map<std::string, std::string> generator_params(const Candidate& candidate) {
  std::map<std::string, std::string> params = candidate.extra_params;
  params["spec"] = candidate.spec.to_string();
  params["schedule"] = candidate.schedule;
  return params;
}

// Runs `compile`, turning what the candidate is into a status: a schedule
// that does not fit is invalid, any other error a failed compile.
template <typename Build, typename Compile>
Build contained_build(Compile compile) {
  Build build;
  try {
    build.kernel = compile();
  } catch (const schedules::ScheduleError& error) {
    build.status = Status::invalid;
    build.detail = error.what();
  } catch (const std::exception& error) {
    build.status = Status::compile_failed;
    build.detail = error.what();
  }
  return build;
}

}  // namespace

std::vector<HalideAutoscheduler> x86_autoschedulers(int threads) {
  const std::string parallelism = std::to_string(threads);
  return {
      {"Adams2019", ATTNFORGE_PLUGIN_ADAMS2019, {{"parallelism", parallelism}, {"beam_size", "1"}}},
      {"Li2018", ATTNFORGE_PLUGIN_LI2018, {{"parallelism", parallelism}}},
      {"Mullapudi2016", ATTNFORGE_PLUGIN_MULLAPUDI2016, {{"parallelism", parallelism}}}};
}

std::vector<HalideAutoscheduler> cuda_autoschedulers(int multiprocessors) {
  const std::string parallelism = std::to_string(multiprocessors);
  return {{"Anderson2021",
           ATTNFORGE_PLUGIN_ANDERSON2021,
           {{"parallelism", parallelism}, {"beam_size", "1"}}},
          {"Li2018", ATTNFORGE_PLUGIN_LI2018, {{"parallelism", parallelism}}}};
}

std::vector<HalideAutoscheduler> autoschedulers_for(const Halide::Target& target, int threads) {
  // The SMs of the H100 and H200 class the GPU targets are tuned for.
  constexpr int kMultiprocessors = 132;
  if (target.has_feature(Halide::Target::CUDA)) return cuda_autoschedulers(kMultiprocessors);
  if (target.has_gpu_feature()) return {};  // no peers for other GPU APIs
  return x86_autoschedulers(threads);
}

Candidate autoscheduled_candidate(const AttentionSpec& spec, const Halide::Target& target,
                                  const HalideAutoscheduler& autoscheduler, int batch, int q_len,
                                  int kv_len) {
  return {spec,
          target,
          "auto",
          {{"estimate_batch", std::to_string(batch)},
           {"estimate_q_len", std::to_string(q_len)},
           {"estimate_kv_len", std::to_string(kv_len)}},
          Halide::AutoschedulerParams(autoscheduler.name, autoscheduler.params),
          autoscheduler.plugin};
}

JitBuild build_jit(const Candidate& candidate) {
  return contained_build<JitBuild>([&] {
    if (!candidate.autoscheduler_plugin.empty())
      Halide::load_plugin(candidate.autoscheduler_plugin);
    std::map<std::string, std::string> params = generator_params(candidate);
    params.erase("spec");
    return std::make_unique<JitAttention>(candidate.spec, candidate.target, params,
                                          candidate.autoscheduler);
  });
}

JitLayerBuild build_jit_layer(const LayerSpec& spec, const Halide::Target& target,
                              const std::string& schedule) {
  return contained_build<JitLayerBuild>([&] {
    return std::make_unique<JitLayer>(spec, target,
                                      std::map<std::string, std::string>{{"schedule", schedule}});
  });
}

namespace {

// One Generator compiled to code and header, without the Halide runtime;
// `what` names it in a compile error.
AotFiles execute_aot(const std::string& generator, const std::map<std::string, std::string>& params,
                     const Halide::Target& target, const std::filesystem::path& dir,
                     const std::string& function, AotOutput output, const std::string& what) {
  std::filesystem::create_directories(dir);
  Halide::Internal::ExecuteGeneratorArgs args;
  args.output_dir = dir.string();
  const bool object = output == AotOutput::object;
  args.output_types = {
      object ? Halide::OutputFileType::object : Halide::OutputFileType::static_library,
      Halide::OutputFileType::c_header};
  args.targets = {target.with_feature(Halide::Target::NoRuntime)};
  args.generator_name = generator;
  args.function_name = function;
  args.file_base_name = function;
  args.create_generator = [](const std::string& name, const Halide::GeneratorContext& context) {
    return Halide::Internal::GeneratorRegistry::create(name, context);
  };
  for (const auto& [name, value] : params) args.generator_params[name] = value;
  try {
    Halide::Internal::execute_generator(args);
  } catch (const Halide::Error& error) {
    throw KernelError("compiling " + what + " for " + target.to_string() + ": " + error.what());
  }
  return {dir / (function + (object ? ".o" : ".a")), dir / (function + ".h")};
}

}  // namespace

AotFiles build_aot(const Candidate& candidate, const std::filesystem::path& dir,
                   const std::string& function, AotOutput output) {
  if (!candidate.autoscheduler.name.empty()) {
    throw KernelError("AOT builds take attnforge schedules, not Halide's autoschedulers");
  }
  return execute_aot("attention", generator_params(candidate), candidate.target, dir, function,
                     output, candidate.spec.to_string());
}

AotFiles build_key_ranges_aot(const AttentionSpec& spec, const Halide::Target& target,
                              const std::filesystem::path& dir, const std::string& function,
                              AotOutput output) {
  return execute_aot("key_ranges", {{"spec", spec.to_string()}}, target, dir, function, output,
                     spec.to_string() + " key ranges");
}

AotFiles build_backward_aot(const AttentionSpec& spec, const Halide::Target& target,
                            const std::string& schedule, const std::filesystem::path& dir,
                            const std::string& function, AotOutput output) {
  return execute_aot("attention_backward", {{"spec", spec.to_string()}, {"schedule", schedule}},
                     target, dir, function, output, spec.to_string() + " backward");
}

AotFiles build_layer_aot(const LayerSpec& spec, const Halide::Target& target,
                         const std::string& schedule, const std::filesystem::path& dir,
                         const std::string& function, AotOutput output) {
  return execute_aot("mha_layer", {{"spec", spec.to_string()}, {"schedule", schedule}}, target, dir,
                     function, output, spec.to_string());
}

std::filesystem::path build_runtime(const Halide::Target& target,
                                    const std::filesystem::path& library) {
  std::filesystem::create_directories(library.parent_path());
  try {
    Halide::compile_standalone_runtime({{Halide::OutputFileType::static_library, library.string()}},
                                       target);
  } catch (const Halide::Error& error) {
    throw KernelError("compiling the Halide runtime for " + target.to_string() + ": " +
                      error.what());
  }
  return library;
}

}  // namespace attnforge::autotune
