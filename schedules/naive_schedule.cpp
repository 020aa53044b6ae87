#include "naive_schedule.h"

namespace attnforge::schedules {

namespace {

using Halide::Func;
using Halide::TailStrategy;
using Halide::Var;

constexpr int kGpuTile = 16;

// One GPU kernel per definition: threads over (x, y), blocks over the rest.
void gpu_tile_all_definitions(Func f, const Var& x, const Var& y) {
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  f.gpu_tile(x, y, xo, yo, xi, yi, kGpuTile, kGpuTile, TailStrategy::GuardWithIf);
  for (int u = 0; u < f.num_update_definitions(); ++u) {
    f.update(u).gpu_tile(x, y, xo, yo, xi, yi, kGpuTile, kGpuTile, TailStrategy::GuardWithIf);
  }
}

}  // namespace

void apply_naive(const MaterializedFuncs& funcs, const AttentionVars& v,
                 const Halide::Target& target) {
  std::vector<std::pair<Func, std::pair<Var, Var>>> stages = {
      {funcs.scores, {v.j, v.i}},     {funcs.logits, {v.j, v.i}},  {funcs.row_max, {v.i, v.h}},
      {funcs.exp_logits, {v.j, v.i}}, {funcs.row_sum, {v.i, v.h}}, {funcs.pv, {v.d, v.i}},
      {funcs.output, {v.d, v.i}}};
  if (funcs.weights.defined()) stages.push_back({funcs.weights, {v.j, v.i}});
  for (auto& [func, dims] : stages) {
    Func f = func;
    f.compute_root();
    if (target.has_gpu_feature()) gpu_tile_all_definitions(f, dims.first, dims.second);
  }
}

}  // namespace attnforge::schedules
