// Schedules drawn uniformly from the space.
#pragma once

#include "strategy.h"

namespace attnforge::autotune {

class RandomStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  std::string name() const override { return "random"; }

 protected:
  std::vector<schedules::Schedule> generate(const std::vector<Trial>& history, int count) override;
};

}  // namespace attnforge::autotune
