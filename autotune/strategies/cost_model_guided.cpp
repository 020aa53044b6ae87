#include "cost_model_guided.h"

#include <algorithm>
#include <set>

namespace attnforge::autotune {

using schedules::Schedule;

namespace {

constexpr size_t kPoolPerProposal = 4;  // each candidate ranked costs a compile and ptxas
constexpr size_t kParents = 3;          // mutations start from one of the fastest measured
constexpr int kAttemptsPerCandidate = 20;

}  // namespace

CostModelStrategy::CostModelStrategy(const schedules::ScheduleSpace& space, uint32_t seed,
                                     std::vector<Schedule> seeds, CostEstimator estimator)
    : Strategy(space, seed, std::move(seeds)), estimator_(std::move(estimator)) {}

std::vector<Schedule> CostModelStrategy::pool(const std::vector<Trial>& history, size_t size) {
  const std::vector<Trial> fastest = fastest_first(history);
  std::vector<Schedule> candidates;
  std::set<std::string> taken;
  for (size_t n = 0; candidates.size() < size && n < size * kAttemptsPerCandidate; ++n) {
    Schedule candidate = space_.sample(rng_);
    if (n % 2 == 1 && !fastest.empty()) {
      const size_t top = std::min(fastest.size(), kParents);
      candidate = schedules::canonical(
          mutate(fastest[std::uniform_int_distribution<size_t>(0, top - 1)(rng_)].schedule));
      if (!space_.contains(candidate)) continue;
    }
    if (seen(candidate) || !taken.insert(candidate.to_json().dump()).second) continue;
    candidates.push_back(candidate);
  }
  return candidates;
}

std::vector<Schedule> CostModelStrategy::generate(const std::vector<Trial>& history, int count) {
  std::vector<Schedule> candidates = pool(history, kPoolPerProposal * count);
  const std::vector<std::optional<double>> estimates = estimator_(candidates);
  std::vector<size_t> order;
  for (size_t n = 0; n < candidates.size() && n < estimates.size(); ++n) {
    if (estimates[n]) order.push_back(n);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return *estimates[a] < *estimates[b]; });
  std::vector<Schedule> ranked;
  for (size_t n : order) {
    if (static_cast<int>(ranked.size()) == count) break;
    ranked.push_back(candidates[n]);
  }
  return ranked;
}

}  // namespace attnforge::autotune
