#include "jit_layer.h"

namespace attnforge {

JitLayer::JitLayer(const LayerSpec& spec, const Halide::Target& target,
                   const std::map<std::string, std::string>& extra_params)
    : spec_(spec),
      callable_(compile_generator("mha_layer", spec.to_string(), target, extra_params)) {}

void JitLayer::run(LayerArguments& args) const {
  KernelArgv argv = layer_argv(spec_, args);
  call_jit(callable_, argv, spec_.to_string());
}

}  // namespace attnforge
