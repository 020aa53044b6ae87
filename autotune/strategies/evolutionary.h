// An evolutionary search: the fastest correct schedules so far are parents;
// children come from crossover (each knob from either parent) and mutation
// (one knob redrawn from its legal values). Random draws start it off and
// fill in when children keep landing on tried or illegal schedules.
#pragma once

#include "strategy.h"

namespace attnforge::autotune {

class EvolutionaryStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  std::string name() const override { return "evolutionary"; }

 protected:
  std::vector<schedules::Schedule> generate(const std::vector<Trial>& history, int count) override;

 private:
  schedules::Schedule crossover(const schedules::Schedule& a, const schedules::Schedule& b);
  const schedules::Schedule& tournament(const std::vector<Trial>& parents);
};

}  // namespace attnforge::autotune
