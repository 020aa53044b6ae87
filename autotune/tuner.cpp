#include "tuner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "builder.h"
#include "checker.h"
#include "confirmation.h"
#include "cuda_screen.h"
#include "generators/shape_bucket.h"
#include "layer_tuning_inputs.h"
#include "schedules/layer_schedule.h"
#include "schedules/presets.h"
#include "schedules/space.h"
#include "strategies/strategy.h"

namespace attnforge::autotune {

namespace {

using Clock = std::chrono::steady_clock;
using schedules::Schedule;

std::string halide_version() {
  return std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
         std::to_string(HALIDE_VERSION_PATCH);
}

// A compiled kernel and its inputs, ready to run in a measuring child.
struct ReadyKernel {
  Status status = Status::ok;  // of the build; run and the rest are set only when ok
  std::string detail;
  std::function<void()> run;
  std::function<std::vector<float>()> output;
  std::function<void()> clear_output;
};

template <typename Kernel, typename Inputs>
ReadyKernel ready(std::unique_ptr<Kernel> built, std::shared_ptr<Inputs> inputs) {
  std::shared_ptr<Kernel> kernel = std::move(built);
  return {Status::ok, "", [kernel, inputs] { kernel->run(inputs->arguments()); },
          [inputs] { return inputs->output(); }, [inputs] { inputs->clear_output(); }};
}

ReadyKernel ready_attention(JitBuild build, const TuneOptions& o) {
  if (build.status != Status::ok) return {build.status, build.detail};
  return ready(std::move(build.kernel), std::make_shared<TuningInputs>(o.spec, o.shape, o.seed));
}

// The run's attention or layer under `schedule` ("naive", a preset name or JSON).
ReadyKernel ready_kernel(const TuneOptions& o, const std::string& schedule) {
  if (!o.layer) return ready_attention(build_jit({o.spec, o.target, schedule}), o);
  JitLayerBuild build = build_jit_layer(*o.layer, o.target, schedule);
  if (build.status != Status::ok) return {build.status, build.detail};
  return ready(std::move(build.kernel),
               std::make_shared<LayerTuningInputs>(*o.layer, o.shape, o.seed));
}

// What every measuring child does: compile, run once and check, then time.
class Measurement {
 public:
  Measurement(const TuneOptions& options, std::filesystem::path expected_path)
      : options_(options), expected_path_(std::move(expected_path)) {}

  // The naive baseline: writes the reference output, and times it when asked.
  Job baseline(bool timed) const {
    return [this, timed](MeasurementGate& gate) {
      ReadyKernel kernel = ready_kernel(options_, "naive");
      if (kernel.status != Status::ok) return Outcome{kernel.status, 0, 0, 0, kernel.detail};
      gate.enter();
      JitAttention::set_num_threads(options_.threads);
      kernel.run();
      std::vector<float> out = kernel.output();
      std::ofstream(expected_path_, std::ios::binary)
          .write(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float));
      if (!timed) return Outcome{};
      return time_runs(kernel.run, options_.min_measure_seconds, 30);
    };
  }

  // Halide's own autoscheduler on the same algorithm, as a competitor.
  Job autoscheduled(const HalideAutoscheduler& autoscheduler) const {
    return [this, autoscheduler](MeasurementGate& gate) {
      return check_and_time(
          ready_attention(build_jit(autoscheduled_candidate(
                              options_.spec, options_.target, autoscheduler, options_.shape.batch,
                              options_.shape.q_len, options_.shape.kv_len)),
                          options_),
          gate);
    };
  }

  Job candidate(const Schedule& schedule) const {
    std::string json = schedule.to_json().dump();
    return [this, json](MeasurementGate& gate) {
      if (options_.target.has_feature(Halide::Target::CUDA) && !options_.layer) {
        if (auto why = cuda_screen(options_.spec, json, options_.target)) {
          return Outcome{Status::invalid, 0, 0, 0, *why};
        }
      }
      return check_and_time(ready_kernel(options_, json), gate);
    };
  }

 private:
  // Runs once on NaN-filled output and compares with the reference; then times.
  Outcome check_and_time(const ReadyKernel& kernel, MeasurementGate& gate) const {
    if (kernel.status != Status::ok) return Outcome{kernel.status, 0, 0, 0, kernel.detail};
    gate.enter();
    JitAttention::set_num_threads(options_.threads);
    kernel.clear_output();
    kernel.run();
    CheckResult check = check_output(kernel.output(), expected(), options_.spec.dtype);
    if (!check.ok) return Outcome{Status::wrong, 0, 0, 0, check.detail};
    return time_runs(kernel.run, options_.min_measure_seconds, 30);
  }

  std::vector<float> expected() const {
    std::ifstream in(expected_path_, std::ios::binary | std::ios::ate);
    std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(values.data()), values.size() * sizeof(float));
    return values;
  }

  const TuneOptions& options_;
  std::filesystem::path expected_path_;
};

Record make_record(const TuneOptions& options, const nlohmann::json& schedule,
                   const Outcome& outcome) {
  Record r;
  r.spec = spec_key(options);
  r.target = options.target.to_string();
  r.bucket = shape_bucket(options.shape.batch, options.shape.q_len, options.shape.kv_len);
  r.schedule = schedule;
  r.status = outcome.status;
  r.ms_median = outcome.ms_median;
  r.ms_min = outcome.ms_min;
  r.ms_max = outcome.ms_max;
  r.detail = outcome.detail.substr(0, 2000);
  r.strategy = options.strategy;
  r.attnforge_version = ATTNFORGE_VERSION;
  r.halide_version = halide_version();
  r.time = utc_now();
  return r;
}

std::filesystem::path make_work_dir() {
  char name[] = "/tmp/attnforge_tune_XXXXXX";
  if (!::mkdtemp(name)) throw std::runtime_error("cannot create a temporary folder");
  return name;
}

// Presets that fit this spec and target, by canonical JSON: they seed every
// strategy, and their records say which preset they are. A layer's take the
// target's projection defaults.
std::map<std::string, std::string> fitting_presets(const TuneOptions& options) {
  std::map<std::string, std::string> presets;
  for (const std::string& name : schedules::presets_for(options.target)) {
    Schedule preset = schedules::load_preset(name);
    if (options.layer) preset = schedules::with_projection_defaults(preset, options.target);
    preset = schedules::canonical(preset);
    const bool fits = options.layer
                          ? !schedules::check_layer(preset, *options.layer, options.target)
                          : !schedules::check(preset, options.spec, options.target);
    if (fits) presets.emplace(preset.to_json().dump(), name);
  }
  return presets;
}

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

// This run's (spec, target, bucket) and generation: which records are its
// own. Those of another generation are measured again.
struct RunKey {
  explicit RunKey(const TuneOptions& options) {
    const Record own = make_record(options, nullptr, {});
    group = own.group();
    generation = own.generation();
  }
  bool holds(const Record& r) const { return r.group() == group && r.generation() == generation; }
  std::string group, generation;
};

// The recorded times of the naive baseline and the best autoscheduler, into `progress`.
void read_competitor_times(const TuneOptions& options, const Database& database,
                           Progress& progress) {
  const RunKey run(options);
  for (const Record& r : database.records()) {
    if (!r.schedule.is_string() || r.status != Status::ok || !run.holds(r)) continue;
    if (r.schedule == "naive") {
      progress.naive_ms = r.ms_median;
    } else if (progress.autoscheduler_ms == 0.0 || r.ms_median < progress.autoscheduler_ms) {
      progress.autoscheduler_ms = r.ms_median;
    }
  }
}

// Outcomes of schedules already in the database for this run's (spec,
// target, bucket), by record key: each key's standing record.
std::map<std::string, Trial> recorded_outcomes(const TuneOptions& options,
                                               const Database& database) {
  const RunKey run(options);
  std::map<std::string, Trial> recorded;
  for (const Record& r : database.records()) {
    if (r.schedule.is_string() || !run.holds(r) || database.standing(r.key()) != &r) continue;
    try {
      recorded.emplace(r.key(), Trial{Schedule::from_json(r.schedule), r.status, r.ms_median});
    } catch (const schedules::ScheduleError&) {  // a schedule this version cannot read
    }
  }
  return recorded;
}

// The winners this database holds for this target under other shape buckets
// of the spec, then under other specs, that fit this run's space: a start
// learned from related runs, proposed before the presets. A layer takes an
// attention winner with the target's projection defaults, an attention a
// layer winner's attention part.
std::vector<Schedule> related_winners(const TuneOptions& options, const Database& database,
                                      const schedules::ScheduleSpace& space) {
  constexpr size_t kMaxWinners = 4;
  const std::string spec = spec_key(options), target = options.target.to_string();
  const std::string bucket =
      shape_bucket(options.shape.batch, options.shape.q_len, options.shape.kv_len);
  const std::vector<Record> winners =
      database.winners({target, {RecordKind::preset, RecordKind::tuned}, [&](const Record& r) {
                          return r.spec != spec || r.bucket != bucket;  // not this run's own
                        }});
  std::vector<Schedule> same_spec, other_specs;
  for (const Record& record : winners) {
    Schedule s;
    try {
      s = Schedule::from_json(record.schedule);
    } catch (const schedules::ScheduleError&) {  // a schedule this version cannot read
      continue;
    }
    s = options.layer ? schedules::with_projection_defaults(s, options.target)
                      : schedules::attention_part(s);
    s = schedules::canonical(s);
    if (!space.contains(s)) continue;
    (record.spec == spec ? same_spec : other_specs).push_back(s);
  }
  same_spec.insert(same_spec.end(), other_specs.begin(), other_specs.end());
  if (same_spec.size() > kMaxWinners) same_spec.resize(kMaxWinners);
  return same_spec;
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
  std::filesystem::path work_dir;
  std::unique_ptr<ContainedRunner> runner;
  std::unique_ptr<Measurement> measurement;
  if (!options.simulate) {
    work_dir = make_work_dir();
    runner = std::make_unique<ContainedRunner>(work_dir, options.runner);
    measurement = std::make_unique<Measurement>(options, work_dir / "expected.bin");
    try {
      write_reference(*runner, *measurement);
    } catch (...) {
      std::filesystem::remove_all(work_dir);
      throw;
    }
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
  std::vector<Schedule> seeds = related_winners(options, database, space);
  for (const auto& [json, name] : presets)
    seeds.push_back(Schedule::from_json(nlohmann::json::parse(json)));
  auto strategy = make_strategy(options.strategy, space, options.seed, seeds);
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
  if (!work_dir.empty()) std::filesystem::remove_all(work_dir);
  return summary;
}

}  // namespace attnforge::autotune
