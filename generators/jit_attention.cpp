#include "jit_attention.h"

namespace attnforge {

JitAttention::JitAttention(const AttentionSpec& spec, const Halide::Target& target,
                           const std::map<std::string, std::string>& extra_params)
    : spec_(spec) {
  try {
    auto generator =
        Halide::Internal::GeneratorRegistry::create("attention", Halide::GeneratorContext(target));
    generator->set_generatorparam_value("spec", spec.to_string());
    for (const auto& [name, value] : extra_params) generator->set_generatorparam_value(name, value);
    callable_ = generator->compile_to_callable();
  } catch (const Halide::Error& error) {
    throw KernelError("compiling " + spec.to_string() + ": " + error.what());
  }
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
