// A fresh folder in the system's temporary folder ($TMPDIR, else /tmp),
// removed with everything in it when destroyed: on every way out of its
// scope, exceptions included.
#pragma once

#include <filesystem>
#include <string>

namespace attnforge::autotune {

class TempDir {
 public:
  // The folder's name is `prefix` and six random characters. Throws
  // std::runtime_error when it cannot be made.
  explicit TempDir(const std::string& prefix = "attnforge_");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace attnforge::autotune
