// attnforge tune: search schedules for one spec and shape (or each job of a
// plan) on this machine, then draw the database's tuning curve next to it.
#include <fmt/format.h>

#include <cstdio>

#include "autotune/backward_tuning.h"
#include "autotune/knob_values.h"
#include "autotune/modifier_file.h"
#include "autotune/shard_choice.h"
#include "autotune/tuner.h"
#include "autotune/tuning_plan.h"
#include "commands.h"
#include "spec/attention_spec.h"
#include "spec/layer_spec.h"
#include "tuning_curve.h"

namespace attnforge::cli {

namespace {

using namespace attnforge::autotune;

struct TuneArgs {
  std::string spec, target = "host", shape, budget = "3m", strategy = "evolutionary", db;
  std::string shard = "0/1", plan;
  std::vector<std::string> knobs, mods;
  uint32_t seed = 1;
  int threads = 0, jobs = 2, confirm = 3, shard_count = 0;
  size_t max_candidates = 0;
  double timeout = 120;
  bool no_autoschedulers = false;
  bool estimate = false;
  bool backward = false;
};

// B,H,Lq,Lk with H equal to the spec's heads.
TuningShape parse_shape(const std::string& text, const std::string& spec, int heads) {
  int b = 0, h = 0, lq = 0, lk = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d,%d,%d,%d%c", &b, &h, &lq, &lk, &tail) != 4 || b < 1 || lq < 1 ||
      lk < 1) {
    throw CLI::ValidationError("--shape", "'" + text + "' is not B,H,Lq,Lk (e.g. 1,8,2048,2048)");
  }
  if (h != heads) {
    throw CLI::ValidationError("--shape",
                               fmt::format("H = {} but spec {} has {} heads", h, spec, heads));
  }
  return {b, lq, lk};
}

Halide::Target parse_target(const std::string& text) {
  if (text == "host") return Halide::get_host_target();
  if (!Halide::Target::validate_target_string(text)) {
    throw CLI::ValidationError(
        "--target", "'" + text + "' is not a Halide target (e.g. host-cuda-cuda_capability_80)");
  }
  return Halide::Target(text);
}

// --backward: the spec's backward kernel (autotune/backward_tuning.h).
int run_backward_tune(const TuneArgs& args, const TuneOptions& options, Database& db) {
  if (options.layer) throw CLI::ValidationError("--backward", "layers have no backward kernels");
  if (args.estimate) throw CLI::ValidationError("--backward", "not with --estimate");
  TuneSummary summary = tune_backward(options, db, [](const Progress& p) {
    const std::string confirmed = p.confirmed > 0 ? fmt::format(", {} confirmed", p.confirmed) : "";
    const std::string autoscheduler =
        p.autoscheduler_ms > 0 ? fmt::format(", autoscheduler {:.1f} ms", p.autoscheduler_ms) : "";
    fmt::print(
        stderr, "\r{} measured, {} failed{}, best {:.3f} ms (naive {:.1f} ms{}), {:.0f} s left   ",
        p.measured, p.failures, confirmed, p.best_ms, p.naive_ms, autoscheduler, p.seconds_left);
  });
  fmt::print(stderr, "\n");
  if (summary.best) {
    fmt::print("best backward: {:.3f} ms ({:.1f}x naive) {}\n", summary.best->ms_median,
               summary.progress.naive_ms / summary.best->ms_median, summary.best->schedule.dump());
  }
  return 0;
}

// One job: the spec, shape and target of the command line or of a plan's line.
int run_tune(const TuneArgs& args, const ShardChoice& shard) {
  TuneOptions options;
  if (names_a_layer(args.spec)) {
    options.layer = LayerSpec::parse(args.spec);
    options.spec = options.layer->attention;
  } else {
    options.spec = AttentionSpec::parse(args.spec);
  }
  options.target = parse_target(args.target);
  options.shape = parse_shape(args.shape, args.spec, options.spec.heads);
  if (options.layer && options.layer->self_attention &&
      options.shape.q_len != options.shape.kv_len) {
    throw CLI::ValidationError("--shape", "a self-attention layer has Lq = Lk");
  }
  options.budget_seconds = parse_duration(args.budget);
  options.strategy = args.strategy;
  options.seed = args.seed;
  options.threads = args.threads;
  options.runner.parallel_jobs = args.jobs;
  options.confirm_rounds = args.confirm;
  options.runner.timeout_seconds = args.timeout;
  options.max_candidates = args.max_candidates;
  for (const std::string& text : args.knobs) options.knob_values.insert(parse_knob_values(text));
  options.autoschedulers = !args.no_autoschedulers;
  options.estimate_only = args.estimate;
  options.shard = shard.index;
  options.shards = shard.count;
  Database db(args.db);
  if (db.skipped_lines() > 0) {
    fmt::print(stderr, "{}: skipped {} lines that are not records\n", args.db, db.skipped_lines());
  }
  if (args.backward) return run_backward_tune(args, options, db);
  const char* done = args.estimate ? "estimated" : "measured";
  TuneSummary summary = tune(options, db, [done](const Progress& p) {
    // The naive baseline is timed after the search, once per database.
    const std::string naive = p.naive_ms > 0 ? fmt::format(" (naive {:.1f} ms)", p.naive_ms) : "";
    const std::string confirmed = p.confirmed > 0 ? fmt::format(", {} confirmed", p.confirmed) : "";
    fmt::print(stderr, "\r{} {}, {} failed{}, best {:.3f} ms{}, {:.0f} s left   ", p.measured, done,
               p.failures, confirmed, p.best_ms, naive, p.seconds_left);
  });
  fmt::print(stderr, "\n");
  if (summary.best && args.estimate) {
    fmt::print("best estimate: {:.3f} ms (GPU cost model, never run) {}\n", summary.best->ms_median,
               summary.best->schedule.dump());
  } else if (summary.best) {
    fmt::print("best: {:.3f} ms ({:.1f}x naive) {}\n", summary.best->ms_median,
               summary.progress.naive_ms / summary.best->ms_median, summary.best->schedule.dump());
  }
  std::string why;
  const std::filesystem::path png = tuning_curve_path(args.db);
  if (plot_tuning_curve(args.db, png, why)) {
    fmt::print("tuning curve: {}\n", png.string());
  } else {
    fmt::print(stderr, "no tuning curve: {}\n", why);
  }
  return 0;
}

// The command line's job, or every job of the plan in order, each with the
// whole budget, this process's share of each.
int run_tune_command(const TuneArgs& args) {
  if (args.plan.empty() == (args.spec.empty() || args.shape.empty())) {
    throw CLI::ValidationError("--plan",
                               "give either --spec and --shape, or --plan FILE (not both)");
  }
  const ShardChoice shard = parse_shard(args.shard, args.shard_count);
  if (args.shard != "0/1") fmt::print(stderr, "shard {} of {}\n", shard.index, shard.count);
  const std::vector<autotune::LoadedModifier> mods = autotune::load_modifier_arguments(args.mods);
  if (args.plan.empty()) {
    TuneArgs hashed = args;
    hashed.spec = autotune::with_modifier_hashes(args.spec, mods);
    return run_tune(hashed, shard);
  }
  const std::vector<PlannedJob> jobs = read_plan(args.plan);
  for (const PlannedJob& job : jobs) {
    fmt::print(stderr, "{}:{}: {} {} on {}\n", args.plan, job.line, job.spec, job.shape,
               job.target);
    TuneArgs one = args;
    one.spec = autotune::with_modifier_hashes(job.spec, mods);
    one.shape = job.shape;
    one.target = job.target;
    if (int status = run_tune(one, shard); status != 0) return status;
  }
  return 0;
}

}  // namespace

Action add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* tune = app.add_subcommand("tune", "Search schedules for one spec and shape");
  tune->add_option("--spec", args->spec,
                   "Attention spec (e.g. causal.mha8.d64.f32) or layer spec (e.g. "
                   "self.dm512.full.mha8.d64.f32)");
  tune->add_option("--target", args->target, "Halide target (default: host)");
  tune->add_option("--shape", args->shape, "B,H,Lq,Lk, e.g. 1,8,2048,2048");
  tune->add_option("--plan", args->plan,
                   "Tune each job of this file, one '<spec> <B,H,Lq,Lk> [<target>]' per line, "
                   "instead of --spec and --shape");
  tune->add_option("--budget", args->budget, "Time budget: 90s, 3m, 1h (default 3m)");
  tune->add_option("--strategy", args->strategy,
                   "exhaustive, random, evolutionary, model, or gpu-model (CUDA targets: "
                   "candidates ranked by the offline cost model, scripts/gpu-cost-model) "
                   "(default evolutionary)");
  tune->add_option("--seed", args->seed, "Seed of the strategy (default 1)");
  tune->add_option("--db", args->db, "Tuning database (JSONL), appended to")->required();
  tune->add_option("--mod", args->mods,
                   "name=FILE: a modifier file (algorithm/modifier.h) that specs name as "
                   ".mod<name>; repeatable");
  tune->add_option("--threads", args->threads, "Kernel threads (default: all cores)");
  tune->add_option("--jobs", args->jobs, "Candidates compiled at once (default 2)");
  tune->add_option("--timeout", args->timeout, "Seconds before a candidate is killed");
  tune->add_option("--confirm", args->confirm,
                   "Rounds in which the finalists are measured again at the end (default 3; 0: "
                   "none)")
      ->check(CLI::Range(0, 10));
  tune->add_option("--shard", args->shard,
                   "This machine's share: i/n (default 0/1), or auto: the task of a Slurm job "
                   "array or a Kubernetes indexed job");
  tune->add_option("--shard-count", args->shard_count,
                   "With --shard auto in a Kubernetes indexed job: its number of tasks "
                   "(default: ATTNFORGE_SHARD_COUNT)")
      ->check(CLI::PositiveNumber);
  tune->add_option("--max-candidates", args->max_candidates,
                   "Stop after this many proposals, measured here or by other shards (default: "
                   "the budget only)");
  tune->add_option("--knob", args->knobs,
                   "Search a knob over only these values: name=v1,v2 (repeatable), e.g. "
                   "key_block=32,64 or form=online");
  tune->add_flag("--backward", args->backward,
                 "Tune the spec's backward kernel (dQ, dK, dV): the backward presets, then every "
                 "combination of the backward knobs' searched values, shuffled by --seed");
  tune->add_flag("--no-autoschedulers", args->no_autoschedulers,
                 "Do not time Halide's autoschedulers (e.g. on all shards but one)");
  tune->add_flag("--estimate", args->estimate,
                 "A CUDA target without its GPU here: record the offline cost model's estimate "
                 "of each candidate instead of running it (records marked estimate; they never "
                 "win against measurements, and emit ships them only where nothing was measured)");
  return [tune, args] { return *tune ? run_tune_command(*args) : -1; };
}

}  // namespace attnforge::cli
