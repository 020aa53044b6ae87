#include "evolutionary.h"

#include <algorithm>

#include "schedules/knob_table.h"

namespace attnforge::autotune {

using schedules::Schedule;

namespace {

constexpr size_t kPopulation = 8;  // parents: the fastest correct trials
constexpr int kAttemptsPerChild = 20;

template <typename T>
const T& pick(const std::vector<T>& values, std::mt19937& rng) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

}  // namespace

Schedule EvolutionaryStrategy::crossover(const Schedule& a, const Schedule& b) {
  auto coin = [&] { return std::uniform_int_distribution<int>(0, 1)(rng_) == 1; };
  Schedule child = a;
  for (const schedules::KnobRow& row : schedules::knob_table()) {
    if (row.searched() && coin()) row.set(child, row.get(b));
  }
  return child;
}

const Schedule& EvolutionaryStrategy::tournament(const std::vector<Trial>& parents) {
  const Trial& a = pick(parents, rng_);
  const Trial& b = pick(parents, rng_);
  return a.ms <= b.ms ? a.schedule : b.schedule;
}

std::vector<Schedule> EvolutionaryStrategy::generate(const std::vector<Trial>& history, int count) {
  std::vector<Trial> parents = fastest_first(history);
  if (parents.size() > kPopulation) parents.resize(kPopulation);
  std::vector<Schedule> drawn;
  for (int n = 0; n < count; ++n) {
    Schedule child = space_.sample(rng_);
    for (int attempt = 0; attempt < kAttemptsPerChild && parents.size() >= 2; ++attempt) {
      // A child of two parents, of one, or of the best so far: a third of
      // the children refine the best, where most of a run's gains are.
      const int kind = std::uniform_int_distribution<int>(0, 2)(rng_);
      Schedule candidate = kind == 0   ? mutate(crossover(tournament(parents), tournament(parents)))
                           : kind == 1 ? mutate(tournament(parents))
                                       : mutate(parents.front().schedule);
      candidate = schedules::canonical(candidate);
      if (space_.contains(candidate) && !seen(candidate)) {
        child = candidate;
        break;
      }
    }
    drawn.push_back(child);
  }
  return drawn;
}

}  // namespace attnforge::autotune
