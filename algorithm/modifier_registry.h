// The modifiers this process knows, by name and source hash: loaded from a
// modifier file (generators/modifier_file.h) or defined in code. The forms
// find a spec's modifier here; a forked child (a contained build) inherits
// them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "modifier.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge {

// Checks `modifier` (its name, tensor names and sizes, at least one rule) and
// keeps it under (name, hash); throws std::invalid_argument naming the field.
// Registering the same (name, hash) again keeps the first.
void register_modifier(const std::string& name, const std::string& hash, Modifier modifier);

// The modifier `spec` names; throws SpecError("modifier") when this process
// has none under its name and hash.
const Modifier& modifier_of(const AttentionSpec& spec);

// The extents of `tensor`'s dims in a call of `spec` with these sizes (T:
// int, or Halide::Expr in a kernel).
template <typename T>
std::vector<T> modifier_extents(const ModifierTensor& tensor, const AttentionSpec& spec, T batch,
                                T q_len, T kv_len) {
  std::vector<T> extents;
  for (const ModifierDimension& d : tensor.dims) {
    switch (d.extent) {
      case ModifierExtent::batch:
        extents.push_back(batch);
        break;
      case ModifierExtent::heads:
        extents.push_back(T(spec.heads));
        break;
      case ModifierExtent::queries:
        extents.push_back(q_len);
        break;
      case ModifierExtent::keys:
        extents.push_back(kv_len);
        break;
      case ModifierExtent::fixed:
        extents.push_back(T(d.size));
        break;
    }
  }
  return extents;
}

}  // namespace attnforge
