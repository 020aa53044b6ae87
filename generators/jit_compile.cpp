#include "jit_compile.h"

#include "kernel_support/kernel_memory.h"
#include "spec/cuda_register_limit.h"

namespace attnforge {

namespace {

// The JIT path of a Generator ignores an autoscheduler in its context, so the
// pipeline is autoscheduled here and compiled with the Generator's inputs in
// their declared order (outputs follow, as in the AOT calling convention).
Halide::Callable autoscheduled(Halide::Internal::AbstractGenerator& generator,
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

}  // namespace

Halide::Callable compile_generator(const std::string& name, const std::string& spec,
                                   const Halide::Target& target,
                                   const std::map<std::string, std::string>& params,
                                   const Halide::AutoschedulerParams& autoscheduler) {
  // Before any module of the process loads: set once, it holds for every run.
  if (target.has_feature(Halide::Target::CUDA)) use_screened_cuda_register_limit();
  try {
    auto generator =
        Halide::Internal::GeneratorRegistry::create(name, Halide::GeneratorContext(target));
    generator->set_generatorparam_value("spec", spec);
    for (const auto& [param, value] : params) generator->set_generatorparam_value(param, value);
    if (autoscheduler.name.empty()) return generator->compile_to_callable();
    return autoscheduled(*generator, target, autoscheduler);
  } catch (const Halide::Error& error) {
    throw KernelError("compiling " + spec + ": " + error.what());
  }
}

void call_jit(const Halide::Callable& callable, KernelArgv& argv, const std::string& label) {
  Halide::JITUserContext context;
  // The AOT runtime's allocator, so a JIT run (a tuner's measurement) pays for
  // memory what the shipped kernel pays.
  context.handlers.custom_malloc = [](Halide::JITUserContext*, size_t bytes) {
    return kernel_memory_allocate(bytes);
  };
  context.handlers.custom_free = [](Halide::JITUserContext*, void* block) {
    kernel_memory_free(block);
  };
  Halide::JITUserContext* context_ptr = &context;
  int status = 0;
  try {
    status = callable.call_argv_fast(argv.size() + 1, argv.with_context(&context_ptr));
  } catch (const Halide::Error& error) {
    throw KernelError(label + ": " + error.what());
  }
  if (status != 0) {
    throw KernelError(label + ": kernel failed with Halide error " + std::to_string(status));
  }
}

}  // namespace attnforge
