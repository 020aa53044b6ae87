// Writes a kernel package: one object per planned kernel and the generated
// kernel table in lib/libattnforge_kernels.a, one Halide runtime, the
// attnforge runtime, the public headers and a CMake package, so that
// find_package(attnforge) gives attnforge::runtime.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "emit_target.h"
#include "kernel_plan.h"

namespace attnforge::emit {

// What the package is assembled from (the attnforge build knows these).
struct Toolchain {
  std::string cxx;                               // C++ compiler for the kernel table
  std::string ar;                                // archiver
  std::filesystem::path runtime_library;         // libattnforge_runtime.a
  std::filesystem::path spec_library;            // libattnforge_spec.a
  std::filesystem::path kernel_support_library;  // libattnforge_kernel_support.a
  std::filesystem::path runtime_include;         // runtime/include (attnforge/*.h)
  std::filesystem::path halide_include;          // HalideRuntime*.h
};

// The generated sources, pure functions of the plan (byte-identical per database).
std::string kernel_table_source(const std::vector<PlannedKernel>& plan,
                                const std::vector<EmitTarget>& targets);
std::string package_config();
std::string package_manifest(const std::vector<PlannedKernel>& plan,
                             const std::vector<EmitTarget>& targets);

// Builds everything into `out`; `progress` hears one line per step. Throws
// std::runtime_error (or the builder's errors) when a step fails.
void write_package(const std::vector<PlannedKernel>& plan, const std::vector<EmitTarget>& targets,
                   const Toolchain& toolchain, const std::filesystem::path& out,
                   const std::function<void(const std::string&)>& progress);

}  // namespace attnforge::emit
