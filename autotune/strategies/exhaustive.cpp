#include "exhaustive.h"

namespace attnforge::autotune {

std::vector<schedules::Schedule> ExhaustiveStrategy::generate(const std::vector<Trial>&,
                                                              int count) {
  if (!enumerated_) {
    all_ = space_.enumerate();
    enumerated_ = true;
  }
  std::vector<schedules::Schedule> drawn;
  while (next_ < all_.size() && static_cast<int>(drawn.size()) < count) {
    const schedules::Schedule& candidate = all_[next_++];
    if (!seen(candidate)) drawn.push_back(candidate);
  }
  return drawn;
}

}  // namespace attnforge::autotune
