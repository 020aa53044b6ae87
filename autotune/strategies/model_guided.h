// A model-guided search: a k-nearest-neighbour cost model fit on the correct
// trials so far (knobs as log-scaled features, log time as the target) ranks
// many candidates (half random, half near the fastest so far), and the
// predicted-fastest are proposed. One in four
// proposals stays random so the model keeps learning away from its optimum.
#pragma once

#include "strategy.h"

namespace attnforge::autotune {

class ModelGuidedStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  std::string name() const override { return "model"; }

  // Predicted log(ms) of `schedule` from the correct trials of `history`.
  static double predict(const std::vector<Trial>& history, const schedules::Schedule& schedule);

 protected:
  std::vector<schedules::Schedule> generate(const std::vector<Trial>& history, int count) override;
};

}  // namespace attnforge::autotune
