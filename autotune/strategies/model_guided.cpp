#include "model_guided.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "schedules/knob_table.h"

namespace attnforge::autotune {

using schedules::Schedule;

namespace {

constexpr size_t kNeighbours = 3;
constexpr int kCandidatesPerProposal = 32;
constexpr int kRandomEvery = 4;

// Knobs as numbers on comparable scales, as the knob table says: log2 of
// the integers, enums one-hot (2 for the value, so a change of form weighs
// as much as four doublings), flags 0/1, lists by their length.
std::vector<double> features(const Schedule& s) {
  using schedules::KnobFeature;
  std::vector<double> f;
  for (const schedules::KnobRow& row : schedules::knob_table()) {
    const int value = row.get(s);
    switch (row.feature()) {
      case KnobFeature::log2:
        f.push_back(std::log2(std::max(1, value)));
        break;
      case KnobFeature::one_hot:
        for (size_t n = 0; n < row.names().size(); ++n) f.push_back(value == int(n) ? 2.0 : 0.0);
        break;
      case KnobFeature::flag:
        f.push_back(value != 0 ? 1.0 : 0.0);
        break;
      case KnobFeature::count:
        f.push_back(static_cast<double>(schedules::KnobRow::list_of_code(value).size()));
        break;
    }
  }
  return f;
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t n = 0; n < a.size(); ++n) sum += (a[n] - b[n]) * (a[n] - b[n]);
  return sum;
}

}  // namespace

double ModelGuidedStrategy::predict(const std::vector<Trial>& history, const Schedule& schedule) {
  std::vector<std::pair<double, double>> neighbours;  // (distance, log ms)
  const std::vector<double> x = features(schedule);
  for (const Trial& trial : history) {
    if (trial.status != Status::ok || trial.ms <= 0.0) continue;
    neighbours.push_back({distance(x, features(trial.schedule)), std::log(trial.ms)});
  }
  if (neighbours.empty()) return 0.0;
  std::sort(neighbours.begin(), neighbours.end());
  const size_t k = std::min(kNeighbours, neighbours.size());
  double weighted = 0.0, weights = 0.0;
  for (size_t n = 0; n < k; ++n) {
    double w = 1.0 / (1e-3 + neighbours[n].first);
    weighted += w * neighbours[n].second;
    weights += w;
  }
  return weighted / weights;
}

std::vector<Schedule> ModelGuidedStrategy::generate(const std::vector<Trial>& history, int count) {
  const bool fitted = fastest_first(history).size() >= kNeighbours;
  std::vector<Schedule> drawn;
  for (int n = 0; n < count; ++n) {
    if (!fitted || n % kRandomEvery == kRandomEvery - 1) {
      drawn.push_back(space_.sample(rng_));
      continue;
    }
    Schedule best = space_.sample(rng_);
    double best_cost = std::numeric_limits<double>::infinity();
    const std::vector<Trial> fastest = fastest_first(history);
    for (int c = 0; c < kCandidatesPerProposal; ++c) {
      // Half the pool is drawn anywhere, half one or two knobs away from one
      // of the fastest so far, where the model is best informed.
      Schedule candidate = space_.sample(rng_);
      if (c % 2 == 1) {
        const size_t top = std::min<size_t>(fastest.size(), kNeighbours);
        candidate =
            mutate(fastest[std::uniform_int_distribution<size_t>(0, top - 1)(rng_)].schedule);
        if (c % 4 == 3) candidate = mutate(candidate);
        candidate = schedules::canonical(candidate);
        if (!space_.contains(candidate)) continue;
      }
      if (seen(candidate)) continue;
      bool duplicate = std::find(drawn.begin(), drawn.end(), candidate) != drawn.end();
      double cost = predict(history, candidate);
      if (!duplicate && cost < best_cost) {
        best = candidate;
        best_cost = cost;
      }
    }
    drawn.push_back(best);
  }
  return drawn;
}

}  // namespace attnforge::autotune
