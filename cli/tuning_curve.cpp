#include "tuning_curve.h"

#include "autotune/subprocess.h"

namespace attnforge::cli {

std::filesystem::path tuning_curve_path(const std::filesystem::path& database) {
  std::filesystem::path png = database;
  return png.replace_extension(".curve.png");
}

bool plot_tuning_curve(const std::filesystem::path& database, const std::filesystem::path& png,
                       std::string& why) {
  if (run_program({ATTNFORGE_PYTHON, ATTNFORGE_PLOT_SCRIPT, database.string(), png.string()}) !=
      0) {
    why = std::string(ATTNFORGE_PLOT_SCRIPT) + " failed (is matplotlib installed?)";
    return false;
  }
  return true;
}

}  // namespace attnforge::cli
