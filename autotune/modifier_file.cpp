#include "modifier_file.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "algorithm/modifier_registry.h"
#include "subprocess.h"

namespace attnforge::autotune {

namespace fs = std::filesystem;

namespace {

std::string read_source(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::invalid_argument(fmt::format("--mod: cannot read {}", path.string()));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// $XDG_CACHE_HOME/attnforge/modifiers, else ~/.cache/..., else the temporary folder's.
fs::path cache_folder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return fs::path(xdg) / "attnforge" / "modifiers";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return fs::path(home) / ".cache" / "attnforge" / "modifiers";
  }
  return fs::temp_directory_path() / fmt::format("attnforge-modifiers-{}", getuid());
}

// What else a compiled modifier depends on: the compiler, Halide's headers
// and the modifier interface (a library built against another is not reused).
std::string build_hash() {
  static const std::string hash = modifier_hash_of(
      std::string(ATTNFORGE_CXX) + "\n" +
      read_source(fs::path(ATTNFORGE_HALIDE_INCLUDE) / "Halide.h") + "\n" +
      read_source(fs::path(ATTNFORGE_SOURCE_INCLUDE) / "algorithm" / "modifier.h"));
  return hash;
}

// The shared library of `source` (compiled here unless the cache has it).
fs::path compiled_library(const std::string& name, const std::string& hash, const fs::path& path,
                          const std::string& source) {
  const fs::path folder = cache_folder();
  fs::create_directories(folder);
  const fs::path library = folder / fmt::format("{}_{}_{}.so", name, hash, build_hash());
  if (fs::exists(library)) return library;
  // Compiled from a copy of what was hashed, into a file of this process's
  // own, then renamed: a concurrent load never sees half a library.
  const std::string stem = fmt::format("{}_{}.{}", name, hash, getpid());
  const fs::path copy = folder / (stem + ".cpp"), partial = folder / (stem + ".so.partial"),
                 log = folder / (stem + ".log");
  std::ofstream(copy, std::ios::binary) << source;
  const int status = run_program(
      {ATTNFORGE_CXX, "-std=c++17", "-O2", "-fPIC", "-shared", "-I" ATTNFORGE_SOURCE_INCLUDE,
       "-I" ATTNFORGE_HALIDE_INCLUDE, copy.string(), "-o", partial.string()},
      log.string());
  const std::string output = read_source(log);
  fs::remove(copy);
  fs::remove(log);
  if (status != 0) {
    fs::remove(partial);
    throw std::invalid_argument(
        fmt::format("--mod {}={}: does not compile:\n{}", name, path.string(), output));
  }
  fs::rename(partial, library);
  return library;
}

}  // namespace

AttentionSpec LoadedModifier::applied_to(AttentionSpec spec) const {
  spec.modifier = name;
  spec.modifier_hash = hash;
  spec.validate();
  return spec;
}

LoadedModifier load_modifier_file(const std::string& name, const fs::path& path) {
  if (!is_modifier_name(name)) {
    throw std::invalid_argument(fmt::format(
        "--mod {}: not a modifier name (a lowercase letter, then up to 31 lowercase letters and "
        "digits)",
        name));
  }
  const std::string source = read_source(path);
  const std::string hash = modifier_hash_of(source);
  const fs::path library = compiled_library(name, hash, path, source);
  // Kept loaded for the life of the process: kernels hold its rules' code.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw std::invalid_argument(fmt::format("--mod {}={}: cannot load {}: {}", name, path.string(),
                                            library.string(), dlerror()));
  }
  using Define = void (*)(Modifier&);
  const std::string symbol = "attnforge_modifier_" + name;
  auto define = reinterpret_cast<Define>(dlsym(handle, symbol.c_str()));
  if (define == nullptr) {
    throw std::invalid_argument(fmt::format("--mod {}={}: defines no ATTNFORGE_MODIFIER({}, ...)",
                                            name, path.string(), name));
  }
  Modifier modifier;
  define(modifier);
  register_modifier(name, hash, std::move(modifier));
  return {name, hash};
}

LoadedModifier load_modifier_argument(const std::string& argument) {
  const size_t equals = argument.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == argument.size()) {
    throw std::invalid_argument(
        fmt::format("--mod '{}': expected name=path, e.g. document=mods/document.cpp", argument));
  }
  return load_modifier_file(argument.substr(0, equals), argument.substr(equals + 1));
}

std::vector<LoadedModifier> load_modifier_arguments(const std::vector<std::string>& arguments) {
  std::vector<LoadedModifier> loaded;
  for (const std::string& argument : arguments) loaded.push_back(load_modifier_argument(argument));
  return loaded;
}

std::string with_modifier_hashes(const std::string& spec,
                                 const std::vector<LoadedModifier>& loaded) {
  std::string result;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t dot = spec.find('.', start);
    if (dot == std::string::npos) dot = spec.size();
    std::string token = spec.substr(start, dot - start);
    for (const LoadedModifier& m : loaded) {
      if (token == "mod" + m.name) token += "_" + m.hash;
    }
    result += (start == 0 ? "" : ".") + token;
    start = dot + 1;
  }
  return result;
}

}  // namespace attnforge::autotune
