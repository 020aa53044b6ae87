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
Action add_ptx_link_command(CLI::App& app);
Action add_knobs_command(CLI::App& app);
// Built where the benchmarks are (ATTNFORGE_WITH_BENCH); argv names the run in its output.
Action add_bench_command(CLI::App& app, int argc, char** argv);

}  // namespace attnforge::cli
