#include "tuning_curve.h"

#include <spawn.h>
#include <sys/wait.h>

#include <vector>

extern char** environ;

namespace attnforge::cli {

std::filesystem::path tuning_curve_path(const std::filesystem::path& database) {
  std::filesystem::path png = database;
  return png.replace_extension(".curve.png");
}

bool plot_tuning_curve(const std::filesystem::path& database, const std::filesystem::path& png,
                       std::string& why) {
  const std::string python = ATTNFORGE_PYTHON, script = ATTNFORGE_PLOT_SCRIPT;
  const std::string db = database.string(), out = png.string();
  std::vector<char*> argv = {const_cast<char*>(python.c_str()), const_cast<char*>(script.c_str()),
                             const_cast<char*>(db.c_str()), const_cast<char*>(out.c_str()),
                             nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    why = "cannot run " + python;
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    why = script + " failed";
    return false;
  }
  return true;
}

}  // namespace attnforge::cli
