// The attnforge command line: tune for this machine, read or merge tuning
// databases, and emit the tuned kernels as a CMake package.
#include <fmt/format.h>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"attnforge: attention kernels tuned for this machine"};
  app.require_subcommand(1);
  std::vector<attnforge::cli::Action> actions = {
      attnforge::cli::add_tune_command(app), attnforge::cli::add_db_command(app),
      attnforge::cli::add_emit_command(app), attnforge::cli::add_ptx_link_command(app),
      attnforge::cli::add_knobs_command(app)};
#ifdef ATTNFORGE_WITH_BENCH
  actions.push_back(attnforge::cli::add_bench_command(app, argc, argv));
#endif
  CLI11_PARSE(app, argc, argv);
  try {
    for (const auto& action : actions) {
      int status = action();
      if (status >= 0) return status;
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "attnforge: {}\n", error.what());
    return 1;
  }
  return 0;
}
