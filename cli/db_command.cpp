// attnforge db: show the winners of a tuning database, or merge databases.
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "autotune/database.h"
#include "autotune/summary.h"
#include "commands.h"

namespace attnforge::cli {

namespace {

using namespace attnforge::autotune;

std::string ms_of(const std::optional<Record>& r) {
  return r ? fmt::format("{:.3f} ms", r->ms_median) : std::string("-");
}

std::string ratio(const std::optional<Record>& slower, const std::optional<Record>& faster) {
  if (!slower || !faster) return "-";
  return fmt::format("{:.2f}x", slower->ms_median / faster->ms_median);
}

// Per (spec, target, bucket): the best schedule and how it compares with the
// naive baseline, the best preset and Halide's best autoscheduler.
int run_best(const std::string& path) {
  Database db(path);
  for (const GroupSummary& g : summarize(db)) {
    fmt::print("{} {} {}\n", g.spec, g.bucket, g.target);
    fmt::print("  measured {} ({} failed)\n", g.measured, g.failures);
    fmt::print("  naive          {}\n", ms_of(g.naive));
    fmt::print("  autoscheduler  {} {}\n", ms_of(g.best_autoscheduler),
               g.best_autoscheduler ? g.best_autoscheduler->schedule.get<std::string>() : "");
    fmt::print("  best preset    {} {}\n", ms_of(g.best_preset),
               g.best_preset ? g.best_preset->strategy : "");
    fmt::print("  tuned          {} {}\n", ms_of(g.best_tuned),
               g.best_tuned ? g.best_tuned->schedule.dump() : "");
    fmt::print("  tuned vs naive {}, vs best preset {}, vs autoscheduler {}\n",
               ratio(g.naive, g.best_tuned), ratio(g.best_preset, g.best_tuned),
               ratio(g.best_autoscheduler, g.best_tuned));
    if (g.estimated > 0) {
      fmt::print("  estimated      {} {} (fastest of {} cost-model estimates, never run)\n",
                 ms_of(g.best_estimate), g.best_estimate ? g.best_estimate->schedule.dump() : "",
                 g.estimated);
    }
  }
  return 0;
}

// Every input must exist: a mistyped shard is an error, not an empty database.
int run_merge(const std::string& out, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(input, error)) {
      fmt::print(stderr, "db merge: input {} is not a readable file; nothing merged\n", input);
      return 1;
    }
  }
  Database merged(out);
  size_t added = 0;
  for (const std::string& input : inputs) {
    Database from(input);
    size_t added_here = merge(merged, from);
    added += added_here;
    fmt::print("{}: {} of {} records added", input, added_here, from.records().size());
    if (from.skipped_lines()) {
      fmt::print(", {} lines skipped (torn, or not records this version reads)",
                 from.skipped_lines());
    }
    fmt::print("\n");
  }
  fmt::print("{}: {} records added, {} in all\n", out, added, merged.records().size());
  return 0;
}

}  // namespace

Action add_db_command(CLI::App& app) {
  CLI::App* db = app.add_subcommand("db", "Read or merge tuning databases");
  db->require_subcommand(1);
  auto best_path = std::make_shared<std::string>();
  auto merge_out = std::make_shared<std::string>();
  auto merge_inputs = std::make_shared<std::vector<std::string>>();
  CLI::App* best = db->add_subcommand("best", "The fastest schedule per spec, target, bucket");
  best->add_option("--db", *best_path, "Tuning database")->required();
  CLI::App* merge = db->add_subcommand("merge", "Append others' records to one database");
  merge->add_option("--out", *merge_out, "Database to merge into")->required();
  merge->add_option("inputs", *merge_inputs, "Databases to merge")->required();
  return [=] {
    if (*best) return run_best(*best_path);
    if (*merge) return run_merge(*merge_out, *merge_inputs);
    return -1;
  };
}

}  // namespace attnforge::cli
