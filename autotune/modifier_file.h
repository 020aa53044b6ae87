// A user's modifier file (algorithm/modifier.h) made usable in this process:
// compiled into a shared library with the C++ compiler attnforge was built
// with, loaded, and registered under its name and the hash of its source, so
// that specs `.mod<name>_<hash>` build with it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace attnforge::autotune {

struct LoadedModifier {
  std::string name;
  std::string hash;  // modifier_hash_of(the file's bytes)

  // `spec` with this modifier (its name and hash set).
  AttentionSpec applied_to(AttentionSpec spec) const;
};

// Loads modifier `name` from `path`: compiles it (once per source hash, into
// the user's cache folder), loads it and registers it. Throws
// std::invalid_argument naming the file when it cannot be read, does not
// compile, or defines no ATTNFORGE_MODIFIER(name, ...).
LoadedModifier load_modifier_file(const std::string& name, const std::filesystem::path& path);

// "name=path", as --mod takes it.
LoadedModifier load_modifier_argument(const std::string& argument);

// Each of --mod's arguments loaded, in order.
std::vector<LoadedModifier> load_modifier_arguments(const std::vector<std::string>& arguments);

// A spec string as a user writes it, `.mod<name>` with no hash, given the
// hash of the loaded modifier of that name; other strings unchanged.
std::string with_modifier_hashes(const std::string& spec,
                                 const std::vector<LoadedModifier>& loaded);

}  // namespace attnforge::autotune
