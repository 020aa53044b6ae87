// The Python module of a package: `emit --python` copies the binding sources
// (python/ in the source tree) into <package>/python and builds _attnforge
// there with CMake, nanobind and the package's own CMake config, so that
// PYTHONPATH=<package>/python imports attnforge, and `pip install
// <package>/python` installs it (a pyproject.toml and setup.py beside it).
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace attnforge::emit {

struct PythonToolchain {
  std::filesystem::path sources;  // python/: module.cpp, CMakeLists.txt, attnforge/
  std::string cmake, ninja, python, cxx;
};

// Throws std::runtime_error naming the step that fails (a Python without
// nanobind fails at configure, with CMake's message on stderr).
void write_python_module(const PythonToolchain& toolchain, const std::filesystem::path& package,
                         const std::function<void(const std::string&)>& progress);

}  // namespace attnforge::emit
