#include "jit_attention.h"

namespace attnforge {

JitAttention::JitAttention(const AttentionSpec& spec, const Halide::Target& target,
                           const std::map<std::string, std::string>& extra_params,
                           const Halide::AutoschedulerParams& autoscheduler)
    : spec_(spec) {
  try {
    auto generator =
        Halide::Internal::GeneratorRegistry::create("attention", Halide::GeneratorContext(target));
    generator->set_generatorparam_value("spec", spec.to_string());
    for (const auto& [name, value] : extra_params) generator->set_generatorparam_value(name, value);
    if (autoscheduler.name.empty()) {
      callable_ = generator->compile_to_callable();
    } else {
      callable_ = autoscheduled(*generator, target, autoscheduler);
    }
  } catch (const Halide::Error& error) {
    throw KernelError("compiling " + spec.to_string() + ": " + error.what());
  }
}

// The JIT path of a Generator ignores an autoscheduler in its context, so the
// pipeline is autoscheduled here and compiled with the Generator's inputs in
// their declared order (outputs follow, as in the AOT calling convention).
Halide::Callable JitAttention::autoscheduled(Halide::Internal::AbstractGenerator& generator,
                                             const Halide::Target& target,
                                             const Halide::AutoschedulerParams& autoscheduler) {
  Halide::Pipeline pipeline = generator.build_pipeline();
  pipeline.apply_autoscheduler(target, autoscheduler);
  std::vector<Halide::Argument> inferred = pipeline.infer_arguments();
  std::vector<Halide::Argument> ordered;
  for (const auto& info : generator.arginfos()) {
    if (info.dir != Halide::Internal::ArgInfoDirection::Input) continue;
    for (const Halide::Argument& argument : inferred) {
      if (argument.name == info.name) ordered.push_back(argument);
    }
  }
  return pipeline.compile_to_callable(ordered, target);
}

void JitAttention::run(KernelArguments& args) const {
  KernelArgv argv = kernel_argv(spec_, args);
  Halide::JITUserContext context;
  Halide::JITUserContext* context_ptr = &context;
  int status = 0;
  try {
    status = callable_.call_argv_fast(argv.size() + 1, argv.with_context(&context_ptr));
  } catch (const Halide::Error& error) {
    throw KernelError(spec_.to_string() + ": " + error.what());
  }
  if (status != 0) {
    throw KernelError(spec_.to_string() + ": kernel failed with Halide error " +
                      std::to_string(status));
  }
}

void JitAttention::set_num_threads(int threads) {
  Halide::Internal::JITSharedRuntime::set_num_threads(threads);
}

}  // namespace attnforge
