#include "python_module.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>
#include <vector>

#include "autotune/subprocess.h"

namespace attnforge::emit {

namespace fs = std::filesystem;

namespace {

// `pip install <package>/python` installs the module into any environment of
// the Python it was built for: setuptools packs attnforge/ with its built
// _attnforge extension, in a wheel tagged for that Python and platform.
void write_distribution_files(const fs::path& folder) {
  std::ofstream(folder / "pyproject.toml") << fmt::format(
      R"(# Written by attnforge emit: pip install <package>/python
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "attnforge"
version = "{}"
description = "Attention kernels emitted by attnforge, with their runtime"
requires-python = ">=3.8"

[tool.setuptools]
packages = ["attnforge"]

[tool.setuptools.package-data]
attnforge = ["_attnforge*"]
)",
      ATTNFORGE_VERSION);
  std::ofstream(folder / "setup.py")
      << R"(# Written by attnforge emit. The wheel holds a built extension, _attnforge:
# it is tagged for this Python and platform, not as pure Python.
from setuptools import setup
from setuptools.dist import Distribution


class BuiltExtension(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BuiltExtension)
)";
}

}  // namespace

void write_python_module(const PythonToolchain& toolchain, const fs::path& package,
                         const std::function<void(const std::string&)>& progress) {
  progress("Python module");
  const fs::path folder = package / "python";
  fs::create_directories(folder / "attnforge");
  for (const char* file : {"module.cpp", "CMakeLists.txt", "attnforge/__init__.py",
                           "attnforge/key_positions.py", "attnforge/torch.py"}) {
    fs::copy_file(toolchain.sources / file, folder / file, fs::copy_options::overwrite_existing);
  }
  const fs::path build = folder / ".build";
  fs::remove_all(build);
  const std::vector<std::vector<std::string>> steps = {
      {toolchain.cmake, "-S", folder.string(), "-B", build.string(), "-G", "Ninja",
       "-DCMAKE_MAKE_PROGRAM=" + toolchain.ninja, "-DCMAKE_CXX_COMPILER=" + toolchain.cxx,
       "-DCMAKE_BUILD_TYPE=Release", "-DPython_EXECUTABLE=" + toolchain.python,
       "-Dattnforge_DIR=" + fs::absolute(package / "lib/cmake/attnforge").string()},
      {toolchain.cmake, "--build", build.string()}};
  for (const std::vector<std::string>& step : steps) {
    if (run_program(step) != 0) {
      throw std::runtime_error("building the Python module failed: " + step[0] + " " + step[1] +
                               " " + step[2]);
    }
  }
  fs::remove_all(build);
  write_distribution_files(folder);
}

}  // namespace attnforge::emit
