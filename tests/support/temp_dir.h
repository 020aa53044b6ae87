// A fresh folder under /tmp, removed with everything in it when destroyed.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

namespace attnforge::testing {

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/attnforge_test_XXXXXX";
    if (!::mkdtemp(name)) throw std::runtime_error("cannot create a temporary folder");
    path_ = name;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace attnforge::testing
