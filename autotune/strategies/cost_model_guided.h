// A search ranked by an offline cost model (scripts/gpu-cost-model for CUDA):
// each proposal is the predicted-fastest of a pool of unseen candidates, half
// drawn anywhere and half one knob away from the fastest measured so far, so
// a GPU's time goes to the schedules the model expects to win. Candidates the
// model cannot estimate (they do not compile) are never proposed.
#pragma once

#include "strategy.h"

namespace attnforge::autotune {

class CostModelStrategy : public Strategy {
 public:
  CostModelStrategy(const schedules::ScheduleSpace& space, uint32_t seed,
                    std::vector<schedules::Schedule> seeds, CostEstimator estimator);
  std::string name() const override { return "gpu-model"; }

 protected:
  std::vector<schedules::Schedule> generate(const std::vector<Trial>& history, int count) override;

 private:
  std::vector<schedules::Schedule> pool(const std::vector<Trial>& history, size_t size);

  CostEstimator estimator_;
};

}  // namespace attnforge::autotune
