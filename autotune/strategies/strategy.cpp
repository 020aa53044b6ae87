#include "strategy.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include "cost_model_guided.h"
#include "evolutionary.h"
#include "exhaustive.h"
#include "model_guided.h"
#include "random_search.h"

namespace attnforge::autotune {

namespace {

template <typename T>
const T& pick(const std::vector<T>& values, std::mt19937& rng) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

}  // namespace

schedules::Schedule Strategy::mutate(schedules::Schedule s) {
  // Only knobs the space gives a choice: one fixed to a single value for this
  // spec and target (bf16_dots for f32, group_heads for MHA) cannot change.
  std::vector<const schedules::Knob*> open;
  for (const schedules::Knob& knob : space_.knobs()) {
    if (knob.values.size() > 1) open.push_back(&knob);
  }
  if (open.empty()) return s;
  const schedules::Knob& knob = *pick(open, rng_);
  knob.row->set(s, pick(knob.values, rng_));
  return s;
}

using schedules::Schedule;

Strategy::Strategy(const schedules::ScheduleSpace& space, uint32_t seed,
                   std::vector<Schedule> seeds)
    : space_(space), rng_(seed), seeds_(std::move(seeds)) {}

bool Strategy::seen(const Schedule& schedule) const {
  return seen_.count(schedules::canonical(schedule).to_json().dump()) != 0;
}

std::vector<Schedule> Strategy::propose(const std::vector<Trial>& history, int count) {
  // History only grows between calls: take in just what is new.
  for (size_t n = history_taken_; n < history.size(); ++n) {
    seen_.insert(schedules::canonical(history[n].schedule).to_json().dump());
  }
  history_taken_ = history.size();
  std::vector<Schedule> chosen;
  auto take = [&](const Schedule& candidate) {
    Schedule c = schedules::canonical(candidate);
    if (static_cast<int>(chosen.size()) >= count || !space_.contains(c)) return;
    if (seen_.insert(c.to_json().dump()).second) chosen.push_back(c);
  };
  for (const Schedule& seed : seeds_) take(seed);
  // A few rounds: a strategy may draw candidates that turn out seen.
  for (int round = 0; round < 8 && static_cast<int>(chosen.size()) < count; ++round) {
    std::vector<Schedule> drawn = generate(history, count - static_cast<int>(chosen.size()));
    if (drawn.empty()) break;
    for (const Schedule& candidate : drawn) take(candidate);
  }
  return chosen;
}

CostEstimator remembering(CostEstimator model) {
  auto known = std::make_shared<std::map<std::string, std::optional<double>>>();
  return [model = std::move(model), known](const std::vector<Schedule>& schedules) {
    std::vector<std::string> keys;
    std::vector<Schedule> unknown;
    std::vector<std::string> unknown_keys;
    for (const Schedule& s : schedules) {
      keys.push_back(s.to_json().dump());
      if (!known->count(keys.back())) {
        unknown.push_back(s);
        unknown_keys.push_back(keys.back());
      }
    }
    if (!unknown.empty()) {
      const std::vector<std::optional<double>> ms = model(unknown);
      for (size_t n = 0; n < unknown.size() && n < ms.size(); ++n) {
        known->emplace(unknown_keys[n], ms[n]);
      }
    }
    std::vector<std::optional<double>> ms;
    for (const std::string& key : keys) {
      auto found = known->find(key);
      ms.push_back(found == known->end() ? std::nullopt : found->second);
    }
    return ms;
  };
}

std::vector<Trial> fastest_first(const std::vector<Trial>& history) {
  std::vector<Trial> ok;
  for (const Trial& trial : history) {
    if (trial.status == Status::ok) ok.push_back(trial);
  }
  std::stable_sort(ok.begin(), ok.end(),
                   [](const Trial& a, const Trial& b) { return a.ms < b.ms; });
  return ok;
}

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "evolutionary", "model"};
}

std::unique_ptr<Strategy> make_strategy(const std::string& name,
                                        const schedules::ScheduleSpace& space, uint32_t seed,
                                        std::vector<Schedule> seeds, CostEstimator estimator) {
  if (name == "exhaustive") return std::make_unique<ExhaustiveStrategy>(space, seed, seeds);
  if (name == "random") return std::make_unique<RandomStrategy>(space, seed, seeds);
  if (name == "evolutionary") return std::make_unique<EvolutionaryStrategy>(space, seed, seeds);
  if (name == "model") return std::make_unique<ModelGuidedStrategy>(space, seed, seeds);
  if (name == "gpu-model") {
    if (!estimator) throw std::invalid_argument("strategy 'gpu-model' needs a cost model");
    return std::make_unique<CostModelStrategy>(space, seed, seeds, std::move(estimator));
  }
  throw std::invalid_argument(
      "strategy '" + name +
      "' is unknown; expected exhaustive, random, evolutionary, model or gpu-model");
}

}  // namespace attnforge::autotune
