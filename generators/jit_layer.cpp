#include "jit_layer.h"

namespace attnforge {

namespace {

std::map<std::string, std::string> with_spec(std::map<std::string, std::string> params,
                                             const LayerSpec& spec) {
  params["spec"] = spec.to_string();
  return params;
}

}  // namespace

JitLayer::JitLayer(const LayerSpec& spec, const Halide::Target& target,
                   const std::map<std::string, std::string>& extra_params)
    : spec_(spec),
      callable_(compile_generator("mha_layer", spec.to_string(), target,
                                  with_spec(extra_params, spec))) {}

void JitLayer::run(LayerArguments& args) const {
  KernelArgv argv = layer_argv(spec_, args);
  call_jit(callable_, argv, spec_.to_string());
}

}  // namespace attnforge
