// attnforge bench: one run over the given shapes of the naive baseline, the
// presets, the tuned schedules of a database, Halide's autoschedulers,
// OpenBLAS unfused attention and, where a Python imports torch, PyTorch's
// scaled_dot_product_attention. Rows as bench_schedules writes them.
#include <fmt/format.h>

#include "autotune/modifier_file.h"
#include "bench/backward_bench.h"
#include "bench/bench_rows.h"
#include "bench/schedule_bench.h"
#include "bench/torch_peer.h"
#include "bench/tuned_schedules.h"
#include "commands.h"

namespace attnforge::cli {

namespace {

struct BenchArgs {
  std::string db, json, torch = "auto", command;
  std::vector<std::string> shapes = {"1x8x2048x2048x64"}, specs, presets, mods;
  std::vector<std::string> backward_schedules;
  std::vector<int> threads = {2};
  std::vector<int> window = {256, 0};
  double min_time = 0.5;
  bool no_autoschedulers = false, no_presets = false, warm_caches = false, backward = false;
};

// --backward: the backward pass's rows (bench/backward_bench.h).
int run_backward(const BenchArgs& args, const std::string& torch_python) {
  bench::BackwardBenchOptions options;
  for (const std::string& text : args.shapes) options.shapes.push_back(bench::parse_shape(text));
  options.specs = args.specs;
  options.threads = args.threads.back();
  options.timing.min_seconds = args.min_time;
  options.autoschedulers = !args.no_autoschedulers;
  options.presets = !args.no_presets;
  options.preset_names = args.presets;
  options.schedules = args.backward_schedules;
  options.torch_python = torch_python;
  const std::vector<bench::BenchRow> rows = bench::run_backward_bench(options);
  bench::print_rows(rows);
  if (!args.json.empty()) bench::write_rows_json(args.json, rows);
  fmt::print("\nCommand: {}\n", args.command);
  return 0;
}

int run_bench(const BenchArgs& args) {
  bench::BenchOptions options;
  options.threads = args.threads;
  options.timing.min_seconds = args.min_time;
  options.presets = !args.no_presets;
  options.preset_names = args.presets;
  options.autoschedulers = !args.no_autoschedulers;
  const std::vector<autotune::LoadedModifier> mods = autotune::load_modifier_arguments(args.mods);
  for (const std::string& spec : args.specs) {
    options.specs.push_back(autotune::with_modifier_hashes(spec, mods));
  }
  options.warm_caches = args.warm_caches;
  options.window = {args.window[0], args.window[1]};
  if (!args.db.empty()) {
    if (!std::filesystem::exists(args.db))
      throw std::invalid_argument("--db: " + args.db + " does not exist");
    options.tuned = bench::tuned_schedules(args.db);
  }
  if (args.torch == "auto") {
    if (bench::python_has_torch(ATTNFORGE_PYTHON))
      options.torch_python = ATTNFORGE_PYTHON;
    else
      fmt::print(stderr, "no PyTorch in {}: no torch_sdpa rows (scripts/bootstrap --with-torch)\n",
                 ATTNFORGE_PYTHON);
  } else if (args.torch != "none") {
    if (!bench::python_has_torch(args.torch))
      throw std::invalid_argument("--torch: " + args.torch + " cannot import torch");
    options.torch_python = args.torch;
  }
  if (args.backward) return run_backward(args, options.torch_python);
  bench::ScheduleBench bench(options);
  bench.measure_peaks();
  for (const std::string& text : args.shapes) bench.add_shape(bench::parse_shape(text));
  bench.run();
  bench.report(args.json, args.command);
  return 0;
}

}  // namespace

Action add_bench_command(CLI::App& app, int argc, char** argv) {
  auto args = std::make_shared<BenchArgs>();
  args->command = bench::command_line(argc, argv);
  CLI::App* cmd = app.add_subcommand("bench", "Compare tuned kernels with the baseline and peers");
  cmd->add_option("--db", args->db, "Tuning database whose winners run as 'tuned'");
  cmd->add_option("--shapes", args->shapes,
                  "BxHxLqxLkxD, comma separated (default 1x8x2048x2048x64)")
      ->delimiter(',');
  cmd->add_option("--specs", args->specs, "Specs (default: causal and not at each shape)")
      ->delimiter(',');
  cmd->add_option("--threads", args->threads, "Thread counts (default 2)")->delimiter(',');
  cmd->add_option("--min-time", args->min_time, "Least seconds of timed runs per row (0.5)");
  cmd->add_option("--json", args->json, "Write the rows as JSON to this file");
  cmd->add_option("--torch", args->torch,
                  "A Python with PyTorch, 'auto' (the project's .venv) or 'none'");
  cmd->add_flag("--no-autoschedulers", args->no_autoschedulers, "Skip Halide's autoschedulers");
  cmd->add_flag("--no-presets", args->no_presets, "Skip the schedule presets");
  cmd->add_flag("--backward", args->backward,
                "Time the backward pass (dQ, dK, dV): naive, the backward presets, Halide's "
                "autoschedulers, OpenBLAS unfused and PyTorch's SDPA backward");
  cmd->add_option("--backward-schedule", args->backward_schedules,
                  "With --backward: a backward schedule's JSON to time too (repeatable)");
  cmd->add_flag("--warm-caches", args->warm_caches,
                "Time rows with a % bw back to back, without evicting the caches between runs");
  cmd->add_option("--window", args->window,
                  "L,R: the window specs whose window is given per call run with (256,0)")
      ->delimiter(',')
      ->expected(2)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--mod", args->mods,
                  "name=FILE: a modifier file (algorithm/modifier.h) that specs name as "
                  ".mod<name>; repeatable");
  cmd->add_option("--presets", args->presets, "Only these presets, comma separated")
      ->delimiter(',')
      ->excludes("--no-presets");
  return [cmd, args] { return *cmd ? run_bench(*args) : -1; };
}

}  // namespace attnforge::cli
