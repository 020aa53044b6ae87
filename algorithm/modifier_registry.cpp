#include "modifier_registry.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

namespace attnforge {

namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

// By "name_hash"; entries are never removed, so references stay valid.
std::map<std::string, Modifier>& registry() {
  static std::map<std::string, Modifier> modifiers;
  return modifiers;
}

bool is_tensor_name(const std::string& name) {
  return !name.empty() && name.size() <= 32 && name[0] >= 'a' && name[0] <= 'z' &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

void check(const std::string& name, const Modifier& modifier) {
  auto refuse = [&](const std::string& what) {
    throw std::invalid_argument(fmt::format("modifier '{}': {}", name, what));
  };
  if (!is_modifier_name(name)) {
    refuse("not a name: a lowercase letter, then up to 31 lowercase letters and digits");
  }
  if (!modifier.score && !modifier.mask) refuse("defines neither score nor mask");
  if (modifier.tensors.size() > kMaxModifierTensors) {
    refuse(fmt::format("{} tensors; at most {}", modifier.tensors.size(), kMaxModifierTensors));
  }
  std::set<std::string> names;
  for (const ModifierTensor& t : modifier.tensors) {
    if (!is_tensor_name(t.name)) {
      refuse(fmt::format("tensor '{}': not a name (lowercase letters, digits and _)", t.name));
    }
    if (!names.insert(t.name).second) refuse(fmt::format("tensor '{}' declared twice", t.name));
    const bool integer = (t.type.is_int() || t.type.is_uint()) && t.type.bits() >= 8;
    if (!(integer || t.type == Halide::Float(32)) || t.type.lanes() != 1) {
      refuse(
          fmt::format("tensor '{}': {}-bit {} x{}; expected an 8-, 16- or 32-bit integer "
                      "or f32",
                      t.name, t.type.bits(),
                      t.type.is_float() ? "float"
                      : t.type.is_int() ? "int"
                                        : "other",
                      t.type.lanes()));
    }
    if (t.dims.empty() || t.dims.size() > 4) {
      refuse(fmt::format("tensor '{}': {} dimensions; expected 1..4", t.name, t.dims.size()));
    }
    for (const ModifierDimension& d : t.dims) {
      if (d.extent == ModifierExtent::fixed && d.size < 1) {
        refuse(fmt::format("tensor '{}': a fixed dimension of size {}", t.name, d.size));
      }
    }
  }
}

}  // namespace

void register_modifier(const std::string& name, const std::string& hash, Modifier modifier) {
  check(name, modifier);
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().emplace(name + "_" + hash, std::move(modifier));
}

const Modifier& modifier_of(const AttentionSpec& spec) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto found = registry().find(spec.modifier + "_" + spec.modifier_hash);
  if (found == registry().end()) {
    throw SpecError(
        "modifier",
        fmt::format("{}: no modifier '{}' with source hash {} is loaded (pass its file "
                    "with --mod {}=FILE; a changed file has another hash)",
                    spec.to_string(), spec.modifier, spec.modifier_hash, spec.modifier));
  }
  return found->second;
}

}  // namespace attnforge
