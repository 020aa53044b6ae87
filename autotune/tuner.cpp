#include "tuner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "builder.h"
#include "confirmation.h"
#include "generators/shape_bucket.h"
#include "measurement.h"
#include "run_records.h"
#include "run_seeds.h"
#include "schedules/space.h"
#include "strategies/strategy.h"
#include "temp_dir.h"

namespace attnforge::autotune {

namespace {

using Clock = std::chrono::steady_clock;
using schedules::Schedule;

}  // namespace

std::string spec_key(const TuneOptions& options) {
  return options.layer ? options.layer->to_string() : options.spec.to_string();
}

std::string record_key(const TuneOptions& options, const nlohmann::json& schedule) {
  return make_record(options, schedule, {}).key();
}

double parse_duration(const std::string& text) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || value < 0) {
    throw std::invalid_argument("duration '" + text + "': expected e.g. 90s, 3m, 1h");
  }
  return value * scale;
}

namespace {

// The naive baseline's output: the reference every candidate is checked
// against, written before the search.
void write_reference(ContainedRunner& runner, const Measurement& measurement) {
  Outcome reference = runner.run({measurement.baseline(false)})[0];
  if (reference.status != Status::ok) {
    throw std::runtime_error("the naive baseline failed: " + reference.detail);
  }
}

// The competitors, each timed once per database: the naive baseline and
// Halide's autoschedulers. They run after the search, so that it starts at
// once; the budget is the search's.
void measure_competitors(const TuneOptions& options, Database& database, ContainedRunner& runner,
                         const Measurement& measurement) {
  std::vector<Job> jobs;
  std::vector<std::string> names;
  if (!database.contains(record_key(options, "naive"))) {
    jobs.push_back(measurement.baseline(true));
    names.push_back("naive");
  }
  if (options.autoschedulers && !options.layer) {
    const int threads = options.threads > 0 ? options.threads
                                            : static_cast<int>(std::thread::hardware_concurrency());
    for (const HalideAutoscheduler& a : autoschedulers_for(options.target, threads)) {
      std::string name = "autoscheduler:" + a.name;
      if (database.contains(record_key(options, name))) continue;
      jobs.push_back(measurement.autoscheduled(a));
      names.push_back(name);
    }
  }
  std::vector<Outcome> outcomes = runner.run(jobs);
  for (size_t n = 0; n < jobs.size(); ++n) {
    database.append(make_record(options, names[n], outcomes[n]));
  }
}

using Measure = std::function<std::vector<Outcome>(const std::vector<Schedule>&)>;

// At most this many passes of finalists: a pass that leaves an unconfirmed
// leader (a lucky timing further down) is followed by another where the
// budget has room for it.
constexpr int kConfirmationPasses = 3;

// Measures the finalists again in `confirm_rounds` rounds and records the
// results, which then stand for them; passes go on while the fastest
// candidate stands on its search timing alone and another pass fits in the
// time left. Returns the records made.
int confirm_finalists(const TuneOptions& options, const std::map<std::string, std::string>& presets,
                      const Measure& measure, const std::function<double()>& seconds_left,
                      std::map<std::string, Trial>& recorded, Database& database) {
  std::set<std::string> confirmed;
  for (int pass = 0; pass < kConfirmationPasses; ++pass) {
    const auto pass_start = Clock::now();
    std::vector<std::string> keys = pick_finalists(recorded, presets, confirmed, options.finalists);
    if (keys.empty()) break;
    // Each round in a rotated order: no finalist is always measured first.
    std::vector<std::vector<Outcome>> rounds(keys.size());
    for (int round = 0; round < options.confirm_rounds; ++round) {
      std::vector<Schedule> order;
      for (size_t n = 0; n < keys.size(); ++n) {
        order.push_back(recorded.at(keys[(n + round) % keys.size()]).schedule);
      }
      std::vector<Outcome> outcomes = measure(order);
      for (size_t n = 0; n < keys.size(); ++n) {
        rounds[(n + round) % keys.size()].push_back(outcomes[n]);
      }
    }
    std::vector<Record> records;
    for (size_t n = 0; n < keys.size(); ++n) {
      Trial& trial = recorded.at(keys[n]);
      const Outcome outcome = combine_rounds(rounds[n]);
      records.push_back(make_record(options, trial.schedule.to_json(), outcome));
      records.back().strategy = database.standing(keys[n])->strategy;
      records.back().confirmation = true;
      trial = {trial.schedule, outcome.status, outcome.ms_median};
      confirmed.insert(keys[n]);
    }
    database.append(records);
    std::vector<std::string> leader = pick_finalists(recorded, {}, {}, 1);
    if (leader.empty() || confirmed.count(leader.front())) break;
    if (seconds_left() < std::chrono::duration<double>(Clock::now() - pass_start).count()) break;
  }
  return static_cast<int>(confirmed.size());
}
}  // namespace

TuneSummary tune(const TuneOptions& options, Database& database,
                 const std::function<void(const Progress&)>& on_progress) {
  options.spec.validate();
  if (options.layer) options.layer->validate();
  const auto start = Clock::now();
  auto seconds_left = [&] {
    return options.budget_seconds - std::chrono::duration<double>(Clock::now() - start).count();
  };
  TuneSummary summary;
  Progress& progress = summary.progress;
  const std::string bucket =
      shape_bucket(options.shape.batch, options.shape.q_len, options.shape.kv_len);

  // Real runs measure in contained children; a simulation asks options.simulate.
  std::optional<TempDir> work_dir;  // outlives the runner; removed on every way out
  std::unique_ptr<ContainedRunner> runner;
  std::unique_ptr<Measurement> measurement;
  if (!options.simulate) {
    work_dir.emplace("attnforge_tune_");
    runner = std::make_unique<ContainedRunner>(work_dir->path(), options.runner);
    measurement = std::make_unique<Measurement>(options, work_dir->path() / "expected.bin");
    write_reference(*runner, *measurement);
  }
  Measure measure = [&](const std::vector<Schedule>& batch) {
    std::vector<Outcome> outcomes;
    if (options.simulate) {
      for (const Schedule& s : batch) outcomes.push_back(options.simulate(s));
      return outcomes;
    }
    std::vector<Job> jobs;
    for (const Schedule& s : batch) jobs.push_back(measurement->candidate(s));
    return runner->run(jobs);
  };
  std::map<std::string, Trial> recorded = recorded_outcomes(options, database);
  read_competitor_times(options, database, progress);

  // The strategy replays from its seed: a candidate it proposes that is
  // already recorded is read back, not measured, so a resumed run follows the
  // same path as one never interrupted.
  const schedules::ScheduleSpace space =
      options.layer ? schedules::ScheduleSpace(*options.layer, options.target)
                    : schedules::ScheduleSpace(options.spec, options.target);
  const std::map<std::string, std::string> presets = fitting_presets(options);
  auto strategy = make_strategy(options.strategy, space, options.seed,
                                run_seeds(options, database, space, presets));
  std::vector<Trial> history;
  std::hash<std::string> hash;
  auto update_best = [&] {
    summary.best = database.best(spec_key(options), options.target.to_string(), bucket);
    progress.best_ms = summary.best ? summary.best->ms_median : 0.0;
  };
  // The search stops where the confirmation, at the pace measured so far,
  // still fits in the budget.
  const size_t confirmations = std::max(options.confirm_rounds, 0) * (options.finalists + 1);
  auto confirmation_seconds = [&] {
    if (progress.measured == 0) return 0.0;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    return elapsed / progress.measured * confirmations;
  };
  update_best();
  while (seconds_left() > confirmation_seconds() &&
         (options.max_candidates == 0 || history.size() < options.max_candidates)) {
    std::vector<Schedule> proposed = strategy->propose(history, 2 * options.runner.parallel_jobs);
    if (proposed.empty()) break;  // the strategy has run out of candidates
    if (options.max_candidates > 0) {
      proposed.resize(std::min(proposed.size(), options.max_candidates - history.size()));
    }
    std::vector<Schedule> batch;
    std::vector<Trial> trials;  // in proposal order; measured ones filled in below
    for (const Schedule& s : proposed) {
      const std::string key = record_key(options, s.to_json());
      auto found = recorded.find(key);
      if (hash(key) % options.shards != static_cast<size_t>(options.shard)) {
        trials.push_back({s, Status::invalid, 0.0});  // another shard's: not ours to try
      } else if (found != recorded.end()) {
        trials.push_back(found->second);
      } else {
        trials.push_back({s, Status::ok, -1.0});  // to measure
        batch.push_back(s);
      }
    }
    std::vector<Outcome> outcomes = measure(batch);
    std::vector<Record> records;
    size_t next = 0;
    for (Trial& trial : trials) {
      if (trial.ms != -1.0) continue;
      const Outcome& outcome = outcomes[next++];
      trial = {trial.schedule, outcome.status, outcome.ms_median};
      records.push_back(make_record(options, trial.schedule.to_json(), outcome));
      auto preset = presets.find(trial.schedule.to_json().dump());
      if (preset != presets.end()) records.back().strategy = "preset:" + preset->second;
      recorded[records.back().key()] = trial;
      ++progress.measured;
      if (outcome.status != Status::ok) ++progress.failures;
    }
    database.append(records);
    history.insert(history.end(), trials.begin(), trials.end());
    update_best();
    progress.seconds_left = std::max(0.0, seconds_left());
    if (on_progress && !records.empty()) on_progress(progress);
  }
  if (options.confirm_rounds > 0) {
    progress.confirmed =
        confirm_finalists(options, presets, measure, seconds_left, recorded, database);
    update_best();
    if (on_progress) on_progress(progress);
  }
  if (!options.simulate) {
    measure_competitors(options, database, *runner, *measurement);
    read_competitor_times(options, database, progress);
    if (on_progress) on_progress(progress);
  }
  return summary;
}

}  // namespace attnforge::autotune
