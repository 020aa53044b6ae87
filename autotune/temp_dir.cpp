#include "temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace attnforge::autotune {

TempDir::TempDir(const std::string& prefix) {
  std::string name = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(name.data())) {
    throw std::runtime_error("cannot create a temporary folder " + name + ": " +
                             std::strerror(errno));
  }
  path_ = name;
}

TempDir::~TempDir() {
  std::error_code ignored;  // a destructor must not throw; a leftover folder is harmless
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace attnforge::autotune
