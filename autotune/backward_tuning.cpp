#include "backward_tuning.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "backward_problem.h"
#include "builder.h"
#include "checker.h"
#include "confirmation.h"
#include "generators/jit_attention.h"
#include "generators/jit_attention_backward.h"
#include "run_records.h"
#include "spec/shape_bucket.h"
#include "temp_dir.h"

namespace attnforge::autotune {

namespace {

using schedules::BackwardSchedule;

Record backward_record(const TuneOptions& options, const nlohmann::json& schedule,
                       const Outcome& outcome, const std::string& strategy) {
  TuneOptions run = options;
  run.strategy = strategy;
  run.estimate_only = false;
  Record r = make_record(run, schedule, outcome);
  r.backward = true;
  return r;
}

void write_floats(const std::filesystem::path& path, const std::vector<float>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(float)));
  return values;
}

// Writes the forward's out and lse and the naive gradients into `dir`;
// times the naive backward when `timed`.
Job reference_job(const TuneOptions& o, const std::filesystem::path& dir, bool timed) {
  return [&o, dir, timed](MeasurementGate& gate) {
    JitAttention forward(forward_spec_of(o.spec), o.target, {{"schedule", "naive"}});
    JitAttentionBackward naive(o.spec, o.target);
    BackwardProblem problem(o.spec, o.shape, o.seed);
    gate.enter();
    JitAttention::set_num_threads(o.threads);
    forward.run(problem.forward_arguments());
    problem.save_forward(dir);
    naive.run(problem.arguments());
    write_floats(dir / "expected.bin", problem.gradients());
    if (!timed) return Outcome{};
    return time_runs([&] { naive.run(problem.arguments()); }, o.min_measure_seconds, 30);
  };
}

using KernelMaker = std::function<std::unique_ptr<JitAttentionBackward>()>;

// Compiles a kernel, runs it once on NaN-filled gradients against the
// reference, then times it.
Job checked_job(const TuneOptions& o, const std::filesystem::path& dir, KernelMaker make) {
  return [&o, dir, make](MeasurementGate& gate) {
    std::unique_ptr<JitAttentionBackward> kernel;
    try {
      kernel = make();
    } catch (const std::exception& error) {
      return Outcome{Status::compile_failed, 0, 0, 0, error.what()};
    }
    BackwardProblem problem(o.spec, o.shape, o.seed);
    problem.load_forward(dir);
    gate.enter();
    JitAttention::set_num_threads(o.threads);
    problem.clear_gradients();
    kernel->run(problem.arguments());
    const CheckResult check =
        check_output(problem.gradients(), read_floats(dir / "expected.bin"), o.spec.dtype);
    if (!check.ok) return Outcome{Status::wrong, 0, 0, 0, check.detail};
    return time_runs([&] { kernel->run(problem.arguments()); }, o.min_measure_seconds, 30);
  };
}

Job candidate_job(const TuneOptions& o, const std::filesystem::path& dir, std::string schedule) {
  return checked_job(o, dir, [&o, schedule] {
    return std::make_unique<JitAttentionBackward>(
        o.spec, o.target, std::map<std::string, std::string>{{"schedule", schedule}});
  });
}

// Halide's autoscheduler `a` on the backward algorithm, planning for the
// shape (the forward's autoscheduled candidate's parameters).
Job autoscheduled_job(const TuneOptions& o, const std::filesystem::path& dir,
                      const HalideAutoscheduler& a) {
  const Candidate c =
      autoscheduled_candidate(o.spec, o.target, a, o.shape.batch, o.shape.q_len, o.shape.kv_len);
  return checked_job(o, dir, [c] {
    Halide::load_plugin(c.autoscheduler_plugin);
    std::map<std::string, std::string> params = c.extra_params;
    params["schedule"] = c.schedule;
    return std::make_unique<JitAttentionBackward>(c.spec, c.target, params, c.autoscheduler);
  });
}

// Halide's x86 autoschedulers as competitors, each measured once per
// database (GPU targets: none); returns the fastest correct one's time, or 0.
double autoscheduler_competitors(const TuneOptions& o, Database& database, ContainedRunner& runner,
                                 const std::filesystem::path& dir) {
  if (!o.autoschedulers || o.target.has_gpu_feature()) return 0.0;
  const int threads =
      o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::string> keys, pending;
  std::vector<Job> jobs;
  for (const HalideAutoscheduler& a : x86_autoschedulers(threads)) {
    const std::string name = "autoscheduler:" + a.name;
    keys.push_back(backward_record(o, name, {}, "autoscheduler").key());
    if (database.contains(keys.back())) continue;
    pending.push_back(name);
    jobs.push_back(autoscheduled_job(o, dir, a));
  }
  const std::vector<Outcome> outcomes = runner.run(jobs);
  for (size_t n = 0; n < outcomes.size(); ++n) {
    database.append(backward_record(o, pending[n], outcomes[n], "autoscheduler"));
  }
  double fastest = 0.0;
  for (const std::string& key : keys) {
    const Record* r = database.standing(key);
    if (r && r->status == Status::ok && (fastest == 0.0 || r->ms_median < fastest)) {
      fastest = r->ms_median;
    }
  }
  return fastest;
}

std::string preset_name_of(const BackwardSchedule& s) {
  for (const std::string& name : schedules::backward_preset_names()) {
    if (schedules::load_backward_preset(name).to_json() == s.to_json()) return name;
  }
  return "";
}

// The confirmation (as the forward tuner's, confirmation.h): the finalists
// among the candidates proposed so far measured again in confirm_rounds
// rounds, each round in a rotated order, and recorded as confirmations,
// which Database::winners then prefers. Returns how many were confirmed.
int confirm_finalists(const TuneOptions& o, Database& database, ContainedRunner& runner,
                      const std::filesystem::path& dir,
                      const std::vector<BackwardSchedule>& proposed,
                      const std::function<double()>& seconds_left) {
  if (o.confirm_rounds <= 0) return 0;
  std::map<std::string, Record> standing;
  std::vector<Contender> contenders;
  for (const BackwardSchedule& s : proposed) {
    const std::string preset = preset_name_of(s);
    const std::string strategy =
        preset.empty() ? "backward-exhaustive" : Record::preset_strategy(preset);
    const Record* r = database.standing(backward_record(o, s.to_json(), {}, strategy).key());
    if (!r || r->status != Status::ok) continue;
    contenders.push_back({r->key(), r->ms_median, !preset.empty()});
    standing.emplace(r->key(), *r);
  }
  std::set<std::string> confirmed;
  for (int pass = 0; pass < kConfirmationPasses; ++pass) {
    const double pass_start = seconds_left();
    const std::vector<std::string> keys = pick_finalists(contenders, confirmed, o.finalists);
    if (keys.empty()) break;
    const std::vector<Outcome> outcomes =
        measure_in_rounds(keys, o.confirm_rounds, [&](const std::vector<std::string>& order) {
          std::vector<Job> jobs;
          for (const std::string& key : order) {
            jobs.push_back(candidate_job(o, dir, standing.at(key).schedule.dump()));
          }
          return runner.run(jobs);
        });
    std::vector<Record> records;
    for (size_t n = 0; n < keys.size(); ++n) {
      const Record& searched = standing.at(keys[n]);
      const Outcome& outcome = outcomes[n];
      records.push_back(backward_record(o, searched.schedule, outcome, searched.strategy));
      records.back().confirmation = true;
      for (Contender& c : contenders) {
        if (c.key == keys[n]) c.ms = outcome.status == Status::ok ? outcome.ms_median : 1e30;
      }
    }
    database.append(records);
    confirmed.insert(keys.begin(), keys.end());
    const std::vector<std::string> leader = pick_finalists(contenders, {}, 1);
    if (leader.empty() || confirmed.count(leader.front())) break;
    if (seconds_left() < pass_start - seconds_left()) break;
  }
  return static_cast<int>(confirmed.size());
}

}  // namespace

std::vector<BackwardSchedule> backward_candidates(const AttentionSpec& spec,
                                                  const Halide::Target& target, uint32_t seed) {
  std::vector<BackwardSchedule> presets;
  for (const std::string& name : schedules::backward_preset_names()) {
    const BackwardSchedule s = schedules::load_backward_preset(name);
    if (!schedules::check_backward(s, spec, target)) presets.push_back(s);
  }
  std::vector<BackwardSchedule> all(1);
  all[0].vector_width = target.has_feature(Halide::Target::AVX512) ? 16 : 8;
  for (const schedules::BackwardKnob& knob : schedules::backward_knobs()) {
    if (knob.searched.empty()) continue;
    std::vector<BackwardSchedule> next;
    for (const BackwardSchedule& s : all) {
      for (int value : knob.searched) {
        BackwardSchedule t = s;
        t.*knob.field = value;
        next.push_back(t);
      }
    }
    all = std::move(next);
  }
  std::vector<BackwardSchedule> rest;
  for (const BackwardSchedule& s : all) {
    if (!schedules::check_backward(s, spec, target) && preset_name_of(s).empty()) {
      rest.push_back(s);
    }
  }
  std::shuffle(rest.begin(), rest.end(), std::mt19937(seed));
  presets.insert(presets.end(), rest.begin(), rest.end());
  return presets;
}

TuneSummary tune_backward(const TuneOptions& options, Database& database,
                          const std::function<void(const Progress&)>& on_progress) {
  if (auto misfit = backward_misfit(options.spec)) throw *misfit;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  auto seconds_left = [&] {
    return options.budget_seconds - std::chrono::duration<double>(Clock::now() - start).count();
  };
  TempDir work("attnforge_backward_");
  ContainedRunner runner(work.path(), options.runner);
  TuneSummary summary;
  Progress& progress = summary.progress;

  const Record naive = backward_record(options, "naive", {}, "naive");
  const bool timed = !database.contains(naive.key());
  const Outcome reference = runner.run({reference_job(options, work.path(), timed)}).front();
  if (reference.status != Status::ok) {
    throw std::runtime_error("the naive backward reference failed (" + to_string(reference.status) +
                             "): " + reference.detail);
  }
  if (timed) database.append(backward_record(options, "naive", reference, "naive"));
  if (const Record* recorded = database.standing(naive.key())) {
    progress.naive_ms = recorded->ms_median;
  }
  progress.autoscheduler_ms = autoscheduler_competitors(options, database, runner, work.path());
  // The fastest correct candidate of this run's group, of any run.
  auto update_best = [&] {
    WinnerFilter filter{
        options.target.to_string(), {RecordKind::preset, RecordKind::tuned}, {}, true};
    filter.admits = [&](const Record& r) { return r.group() == naive.group(); };
    const std::vector<Record> winners = database.winners(filter);
    if (winners.empty()) return;
    summary.best = winners.front();
    progress.best_ms = winners.front().ms_median;
  };

  const std::vector<BackwardSchedule> candidates =
      backward_candidates(options.spec, options.target, options.seed);
  const size_t limit = options.max_candidates > 0
                           ? std::min(options.max_candidates, candidates.size())
                           : candidates.size();
  const size_t batch_size = std::max(1, options.runner.parallel_jobs) * 2;
  size_t next = 0;
  while (next < limit && seconds_left() > 0) {
    std::vector<Job> jobs;
    std::vector<Record> pending;
    for (; next < limit && jobs.size() < batch_size; ++next) {
      const nlohmann::json json = candidates[next].to_json();
      const std::string preset = preset_name_of(candidates[next]);
      const std::string strategy =
          preset.empty() ? "backward-exhaustive" : Record::preset_strategy(preset);
      Record r = backward_record(options, json, {}, strategy);
      if (database.contains(r.key())) continue;  // measured by an earlier run
      jobs.push_back(candidate_job(options, work.path(), json.dump()));
      pending.push_back(std::move(r));
    }
    const std::vector<Outcome> outcomes = runner.run(jobs);
    for (size_t n = 0; n < outcomes.size(); ++n) {
      Record r = backward_record(options, pending[n].schedule, outcomes[n], pending[n].strategy);
      database.append(r);
      ++progress.measured;
      if (r.status != Status::ok) ++progress.failures;
    }
    update_best();
    progress.seconds_left = std::max(0.0, seconds_left());
    if (on_progress) on_progress(progress);
  }
  const std::vector<BackwardSchedule> proposed(candidates.begin(), candidates.begin() + next);
  progress.confirmed =
      confirm_finalists(options, database, runner, work.path(), proposed, seconds_left);
  update_best();
  progress.seconds_left = std::max(0.0, seconds_left());
  if (on_progress) on_progress(progress);
  return summary;
}

}  // namespace attnforge::autotune
