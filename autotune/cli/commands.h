// The attnforge subcommands: each adds itself to the CLI11 app and runs when
// chosen. Errors are exceptions; main prints them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace attnforge::cli {

// The subcommand's action, to run once parsing chose it.
using Action = std::function<int()>;

Action add_tune_command(CLI::App& app);
Action add_db_command(CLI::App& app);
Action add_emit_command(CLI::App& app);

}  // namespace attnforge::cli
