#include "python_module.h"

#include <stdexcept>
#include <vector>

#include "autotune/subprocess.h"

namespace attnforge::emit {

namespace fs = std::filesystem;

void write_python_module(const PythonToolchain& toolchain, const fs::path& package,
                         const std::function<void(const std::string&)>& progress) {
  progress("Python module");
  const fs::path folder = package / "python";
  fs::create_directories(folder / "attnforge");
  for (const char* file :
       {"module.cpp", "CMakeLists.txt", "attnforge/__init__.py", "attnforge/key_positions.py"}) {
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
}

}  // namespace attnforge::emit
