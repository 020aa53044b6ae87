// A modifier's tensors as a Generator's inputs named mod_<tensor>, in the
// order the modifier declares them (the argv's order: kernel_arguments.h),
// shared by the attention and key-range Generators.
#pragma once

#include <Halide.h>

#include <utility>
#include <vector>

#include "algorithm/attention_inputs.h"
#include "algorithm/modifier_registry.h"

namespace attnforge {

class ModifierInputs {
 public:
  template <typename Generator>
  void declare(Generator& generator, const AttentionSpec& spec) {
    if (!spec.modified()) return;
    for (const ModifierTensor& tensor : modifier_of(spec).tensors) {
      inputs_.emplace_back(
          tensor, generator.template add_input<Halide::Buffer<>>(
                      "mod_" + tensor.name, tensor.type, static_cast<int>(tensor.dims.size())));
    }
  }

  // Each tensor's dims from 0, with the extents of a call of these sizes.
  void constrain(const AttentionSpec& spec, const Halide::Expr& batch, const Halide::Expr& q_len,
                 const Halide::Expr& kv_len) const {
    for (const auto& [tensor, input] : inputs_) {
      const std::vector<Halide::Expr> extents =
          modifier_extents(tensor, spec, batch, q_len, kv_len);
      for (size_t dim = 0; dim < extents.size(); ++dim) {
        input->dim(dim).set_min(0).set_extent(extents[dim]);
      }
    }
  }

  void set_estimates(const AttentionSpec& spec, int batch, int q_len, int kv_len) const {
    for (const auto& [tensor, input] : inputs_) {
      Halide::Region region;
      for (int extent : modifier_extents(tensor, spec, batch, q_len, kv_len)) {
        region.push_back({0, extent});
      }
      input->set_estimates(region);
    }
  }

  // The tensors as the forms read them: clamped to their extents.
  void add_to(AttentionInputs& in) const {
    for (const auto& [tensor, input] : inputs_) {
      in.modifier_tensors[tensor.name] = Halide::BoundaryConditions::repeat_edge(*input);
    }
  }

 private:
  std::vector<std::pair<ModifierTensor, Halide::GeneratorInput<Halide::Buffer<>>*>> inputs_;
};

}  // namespace attnforge
