// Every legal schedule of the space, in enumeration order: for small spaces.
#pragma once

#include "strategy.h"

namespace attnforge::autotune {

class ExhaustiveStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  std::string name() const override { return "exhaustive"; }

 protected:
  std::vector<schedules::Schedule> generate(const std::vector<Trial>& history, int count) override;

 private:
  std::vector<schedules::Schedule> all_;
  size_t next_ = 0;
  bool enumerated_ = false;
};

}  // namespace attnforge::autotune
