#include "backward_schedule.h"

namespace attnforge::schedules {

void apply_naive_backward(const BackwardFuncs& f) {
  for (Halide::Func stage :
       {f.scores, f.probs, f.d_probs, f.out_dots, f.d_scores, f.dq_sum, f.dk_sum, f.dv_sum}) {
    stage.compute_root();
  }
}

}  // namespace attnforge::schedules
