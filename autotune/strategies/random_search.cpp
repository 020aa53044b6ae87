#include "random_search.h"

namespace attnforge::autotune {

std::vector<schedules::Schedule> RandomStrategy::generate(const std::vector<Trial>&, int count) {
  std::vector<schedules::Schedule> drawn;
  for (int n = 0; n < count; ++n) drawn.push_back(space_.sample(rng_));
  return drawn;
}

}  // namespace attnforge::autotune
