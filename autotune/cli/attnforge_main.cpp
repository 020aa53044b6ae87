// The attnforge command line: tune for this machine, and read or merge tuning
// databases.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "autotune/database.h"
#include "autotune/summary.h"
#include "autotune/tuner.h"
#include "generators/attention_spec.h"

namespace {

using namespace attnforge;
using namespace attnforge::autotune;

struct TuneArgs {
  std::string spec, target = "host", shape, budget = "3m", strategy = "evolutionary", db;
  std::string shard = "0/1";
  uint32_t seed = 1;
  int threads = 0, jobs = 2;
  double timeout = 120;
};

// B,H,Lq,Lk with H equal to the spec's heads.
TuningShape parse_shape(const std::string& text, const AttentionSpec& spec) {
  int b = 0, h = 0, lq = 0, lk = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d,%d,%d,%d%c", &b, &h, &lq, &lk, &tail) != 4 || b < 1 || lq < 1 ||
      lk < 1) {
    throw CLI::ValidationError("--shape", "'" + text + "' is not B,H,Lq,Lk (e.g. 1,8,2048,2048)");
  }
  if (h != spec.heads) {
    throw CLI::ValidationError(
        "--shape", fmt::format("H = {} but spec {} has {} heads", h, spec.to_string(), spec.heads));
  }
  return {b, lq, lk};
}

void parse_shard(const std::string& text, TuneOptions& options) {
  int i = -1, n = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n) {
    throw CLI::ValidationError("--shard", "'" + text + "' is not i/n with 0 <= i < n");
  }
  options.shard = i;
  options.shards = n;
}

int run_tune(const TuneArgs& args) {
  TuneOptions options;
  options.spec = AttentionSpec::parse(args.spec);
  options.target = args.target == "host" ? Halide::get_host_target() : Halide::Target(args.target);
  options.shape = parse_shape(args.shape, options.spec);
  options.budget_seconds = parse_duration(args.budget);
  options.strategy = args.strategy;
  options.seed = args.seed;
  options.threads = args.threads;
  options.runner.parallel_jobs = args.jobs;
  options.runner.timeout_seconds = args.timeout;
  parse_shard(args.shard, options);
  Database db(args.db);
  if (db.skipped_lines() > 0) {
    fmt::print(stderr, "{}: skipped {} lines that are not records\n", args.db, db.skipped_lines());
  }
  TuneSummary summary = tune(options, db, [](const Progress& p) {
    fmt::print(stderr,
               "\r{} measured, {} failed, best {:.3f} ms (naive {:.1f} ms), {:.0f} s left   ",
               p.measured, p.failures, p.best_ms, p.naive_ms, p.seconds_left);
  });
  fmt::print(stderr, "\n");
  if (summary.best) {
    fmt::print("best: {:.3f} ms ({:.1f}x naive) {}\n", summary.best->ms_median,
               summary.progress.naive_ms / summary.best->ms_median, summary.best->schedule.dump());
  }
  return 0;
}

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
  }
  return 0;
}

int run_merge(const std::string& out, const std::vector<std::string>& inputs) {
  Database merged(out);
  size_t added = 0;
  for (const std::string& input : inputs) {
    Database in(input);
    std::vector<Record> fresh;
    for (const Record& r : in.records()) {
      if (!merged.contains(r.key())) fresh.push_back(r);
    }
    merged.append(fresh);
    added += fresh.size();
  }
  fmt::print("{}: {} records added, {} in all\n", out, added, merged.records().size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnforge: attention kernels tuned for this machine"};
  app.require_subcommand(1);

  TuneArgs tune_args;
  CLI::App* tune_cmd = app.add_subcommand("tune", "Search schedules for one spec and shape");
  tune_cmd->add_option("--spec", tune_args.spec, "Attention spec, e.g. causal.mha8.d64.f32")
      ->required();
  tune_cmd->add_option("--target", tune_args.target, "Halide target (default: host)");
  tune_cmd->add_option("--shape", tune_args.shape, "B,H,Lq,Lk, e.g. 1,8,2048,2048")->required();
  tune_cmd->add_option("--budget", tune_args.budget, "Time budget: 90s, 3m, 1h (default 3m)");
  tune_cmd->add_option("--strategy", tune_args.strategy,
                       "exhaustive, random, evolutionary or model (default evolutionary)");
  tune_cmd->add_option("--seed", tune_args.seed, "Seed of the strategy (default 1)");
  tune_cmd->add_option("--db", tune_args.db, "Tuning database (JSONL), appended to")->required();
  tune_cmd->add_option("--threads", tune_args.threads, "Kernel threads (default: all cores)");
  tune_cmd->add_option("--jobs", tune_args.jobs, "Candidates compiled at once (default 2)");
  tune_cmd->add_option("--timeout", tune_args.timeout, "Seconds before a candidate is killed");
  tune_cmd->add_option("--shard", tune_args.shard, "This machine's share: i/n (default 0/1)");

  CLI::App* db_cmd = app.add_subcommand("db", "Read or merge tuning databases");
  db_cmd->require_subcommand(1);
  std::string best_path, merge_out;
  std::vector<std::string> merge_inputs;
  CLI::App* best_cmd =
      db_cmd->add_subcommand("best", "The fastest schedule per spec, target, bucket");
  best_cmd->add_option("--db", best_path, "Tuning database")->required();
  CLI::App* merge_cmd = db_cmd->add_subcommand("merge", "Append others' records to one database");
  merge_cmd->add_option("--out", merge_out, "Database to merge into")->required();
  merge_cmd->add_option("inputs", merge_inputs, "Databases to merge")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*tune_cmd) return run_tune(tune_args);
    if (*best_cmd) return run_best(best_path);
    if (*merge_cmd) return run_merge(merge_out, merge_inputs);
  } catch (const std::exception& error) {
    fmt::print(stderr, "attnforge: {}\n", error.what());
    return 1;
  }
  return 0;
}
