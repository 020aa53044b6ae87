#include "tuning_run.h"

#include <algorithm>
#include <set>
#include <thread>

#include "builder.h"
#include "confirmation.h"
#include "gpu_cost_estimator.h"
#include "run_records.h"
#include "run_seeds.h"
#include "schedules/space.h"
#include "spec/shape_bucket.h"

namespace attnforge::autotune {

namespace {

using schedules::Schedule;

const TuneOptions& validated(const TuneOptions& options) {
  options.spec.validate();
  if (options.layer) options.layer->validate();
  return options;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TuningRun::TuningRun(const TuneOptions& options, Database& database,
                     std::function<void(const Progress&)> on_progress)
    : options_(validated(options)),
      database_(database),
      on_progress_(std::move(on_progress)),
      start_(Clock::now()),
      presets_(fitting_presets(options)),
      recorded_(recorded_outcomes(options, database)) {
  if (CostEstimator model = cost_model()) estimator_ = remembering(std::move(model));
  if (!options_.simulate && !options_.estimate_only) {
    work_dir_.emplace("attnforge_tune_");
    runner_ = std::make_unique<ContainedRunner>(work_dir_->path(), options_.runner);
    measurement_ = std::make_unique<Measurement>(options_, work_dir_->path() / "expected.bin");
  }
  read_competitor_times(options_, database_, summary_.progress);
}

void TuningRun::reference() {
  if (!measurement_) return;  // a simulation checks nothing
  Outcome reference = runner_->run({measurement_->baseline(false)})[0];
  if (reference.status != Status::ok) {
    throw std::runtime_error("the naive baseline failed: " + reference.detail);
  }
}

// The strategy replays from its seed: a candidate it proposes that is
// already recorded is read back, not measured, so a resumed run follows the
// same path as one never interrupted.
CostEstimator TuningRun::cost_model() const {
  if (options_.strategy != "gpu-model" && !options_.estimate_only) return {};
  if (!options_.target.has_feature(Halide::Target::CUDA)) {
    const std::string user = options_.estimate_only ? "estimating" : "strategy 'gpu-model'";
    throw std::invalid_argument(user + " ranks CUDA schedules; target '" +
                                options_.target.to_string() + "' has no CUDA");
  }
  if (options_.cost_model) return options_.cost_model;
  return gpu_cost_estimator(
      spec_key(options_),
      shape_bucket(options_.shape.batch, options_.shape.q_len, options_.shape.kv_len));
}

void TuningRun::search() {
  schedules::ScheduleSpace space = options_.layer
                                       ? schedules::ScheduleSpace(*options_.layer, options_.target)
                                       : schedules::ScheduleSpace(options_.spec, options_.target);
  for (const auto& [name, values] : options_.knob_values) space.restrict_knob(name, values);
  auto strategy = make_strategy(options_.strategy, space, options_.seed,
                                run_seeds(options_, database_, space, presets_), estimator_);
  const size_t max_candidates = options_.max_candidates;
  std::vector<Trial> history;
  update_best();
  while (seconds_left() > confirmation_seconds() &&
         (max_candidates == 0 || history.size() < max_candidates)) {
    std::vector<Schedule> proposed = strategy->propose(history, 2 * options_.runner.parallel_jobs);
    if (proposed.empty()) break;  // the strategy has run out of candidates
    if (max_candidates > 0) {
      proposed.resize(std::min(proposed.size(), max_candidates - history.size()));
    }
    std::vector<Trial> trials = trials_of(proposed);
    const size_t measured = measure_pending(trials);
    history.insert(history.end(), trials.begin(), trials.end());
    update_best();
    summary_.progress.seconds_left = std::max(0.0, seconds_left());
    if (measured > 0) report();
  }
}

// Passes go on while the fastest candidate stands on its search timing alone
// and another pass fits in the time left.
void TuningRun::confirm() {
  if (options_.confirm_rounds <= 0 || options_.estimate_only) return;
  std::set<std::string> confirmed;
  for (int pass = 0; pass < kConfirmationPasses; ++pass) {
    const auto pass_start = Clock::now();
    std::vector<std::string> keys =
        pick_finalists(recorded_, presets_, confirmed, options_.finalists);
    if (keys.empty()) break;
    confirm_finalists(keys);
    confirmed.insert(keys.begin(), keys.end());
    std::vector<std::string> leader = pick_finalists(recorded_, {}, {}, 1);
    if (leader.empty() || confirmed.count(leader.front())) break;
    if (seconds_left() < seconds_since(pass_start)) break;
  }
  summary_.progress.confirmed = static_cast<int>(confirmed.size());
  update_best();
  report();
}

// Those not yet in the database; the budget is the search's.
void TuningRun::competitors() {
  if (!measurement_) return;  // a simulation has none
  std::vector<Job> jobs;
  std::vector<std::string> names;
  if (!database_.contains(record_key(options_, "naive")) &&
      (options_.layer || naive_runs_on(options_.spec, options_.target))) {
    jobs.push_back(measurement_->baseline(true));
    names.push_back("naive");
  }
  if (options_.autoschedulers && !options_.layer) {
    const int threads = options_.threads > 0
                            ? options_.threads
                            : static_cast<int>(std::thread::hardware_concurrency());
    for (const HalideAutoscheduler& a : autoschedulers_for(options_.target, threads)) {
      std::string name = "autoscheduler:" + a.name;
      if (database_.contains(record_key(options_, name))) continue;
      jobs.push_back(measurement_->autoscheduled(a));
      names.push_back(name);
    }
  }
  std::vector<Outcome> outcomes = runner_->run(jobs);
  for (size_t n = 0; n < jobs.size(); ++n) {
    database_.append(make_record(options_, names[n], outcomes[n]));
  }
  read_competitor_times(options_, database_, summary_.progress);
  report();
}

std::vector<Trial> TuningRun::trials_of(const std::vector<Schedule>& proposed) const {
  std::vector<Trial> trials;
  for (const Schedule& s : proposed) {
    const std::string key = record_key(options_, s.to_json());
    auto found = recorded_.find(key);
    if (!ours(key)) {
      trials.push_back(Trial::of_other_shard(s));
    } else if (found != recorded_.end()) {
      trials.push_back(found->second);
    } else {
      trials.push_back(Trial::pending(s));
    }
  }
  return trials;
}

size_t TuningRun::measure_pending(std::vector<Trial>& trials) {
  std::vector<Schedule> batch;
  for (const Trial& trial : trials) {
    if (trial.state == TrialState::pending) batch.push_back(trial.schedule);
  }
  std::vector<Outcome> outcomes = measure(batch);
  std::vector<Record> records;
  size_t next = 0;
  for (Trial& trial : trials) {
    if (trial.state != TrialState::pending) continue;
    const Outcome& outcome = outcomes[next++];
    trial = {trial.schedule, outcome.status, outcome.ms_median, TrialState::recorded};
    records.push_back(make_record(options_, trial.schedule.to_json(), outcome));
    auto preset = presets_.find(trial.schedule.to_json().dump());
    if (preset != presets_.end()) records.back().strategy = Record::preset_strategy(preset->second);
    recorded_[records.back().key()] = trial;
    ++summary_.progress.measured;
    if (outcome.status != Status::ok) ++summary_.progress.failures;
  }
  database_.append(records);
  return records.size();
}

void TuningRun::confirm_finalists(const std::vector<std::string>& keys) {
  const std::vector<Outcome> outcomes =
      measure_in_rounds(keys, options_.confirm_rounds, [&](const std::vector<std::string>& order) {
        std::vector<Schedule> schedules;
        for (const std::string& key : order) schedules.push_back(recorded_.at(key).schedule);
        return measure(schedules);
      });
  std::vector<Record> records;
  for (size_t n = 0; n < keys.size(); ++n) {
    Trial& trial = recorded_.at(keys[n]);
    const Outcome& outcome = outcomes[n];
    records.push_back(make_record(options_, trial.schedule.to_json(), outcome));
    records.back().strategy = database_.standing(keys[n])->strategy;
    records.back().confirmation = true;
    trial = {trial.schedule, outcome.status, outcome.ms_median, TrialState::recorded};
  }
  database_.append(records);
}

std::vector<Outcome> TuningRun::measure(const std::vector<Schedule>& batch) {
  std::vector<Outcome> outcomes;
  if (options_.estimate_only) {
    for (const std::optional<double>& ms : estimator_(batch)) {
      outcomes.push_back(ms ? Outcome{Status::ok, *ms, *ms, *ms, "estimated by the GPU cost model"}
                            : Outcome{Status::invalid, 0.0, 0.0, 0.0,
                                      "the GPU cost model has no estimate: its kernels do not "
                                      "compile or assemble"});
    }
    return outcomes;
  }
  if (!measurement_) {
    for (const Schedule& s : batch) outcomes.push_back(options_.simulate(s));
    return outcomes;
  }
  std::vector<Job> jobs;
  for (const Schedule& s : batch) jobs.push_back(measurement_->candidate(s));
  return runner_->run(jobs);
}

// This machine takes the candidates whose record key hashes to its shard.
bool TuningRun::ours(const std::string& record_key) const {
  return std::hash<std::string>()(record_key) % options_.shards ==
         static_cast<size_t>(options_.shard);
}

double TuningRun::seconds_left() const {
  return options_.budget_seconds - seconds_since(start_);
}

double TuningRun::confirmation_seconds() const {
  const int measured = summary_.progress.measured;
  if (measured == 0 || options_.estimate_only) return 0.0;
  const size_t confirmations = std::max(options_.confirm_rounds, 0) * (options_.finalists + 1);
  return seconds_since(start_) / measured * confirmations;
}

void TuningRun::update_best() {
  const std::string spec = spec_key(options_), target = options_.target.to_string();
  const std::string bucket =
      shape_bucket(options_.shape.batch, options_.shape.q_len, options_.shape.kv_len);
  if (options_.estimate_only) {  // the fastest estimate: estimates are never winners
    summary_.best.reset();
    auto own = [&](const Record& r) { return r.spec == spec && r.bucket == bucket; };
    for (const Record& r : database_.estimated_winners({target, {}, own})) summary_.best = r;
  } else {
    summary_.best = database_.best(spec, target, bucket);
  }
  summary_.progress.best_ms = summary_.best ? summary_.best->ms_median : 0.0;
}

void TuningRun::report() const {
  if (on_progress_) on_progress_(summary_.progress);
}

}  // namespace attnforge::autotune
