// Synthetic timings with the structure real ones have: smooth in every knob,
// one best point away from the presets. A stand-in for a machine in
// simulation tests of the strategies and the tuner.
#pragma once

#include <cmath>
#include <string>

#include "autotune/tuner.h"
#include "schedules/schedule.h"

namespace attnforge::autotune {

inline double synthetic_ms(const schedules::Schedule& s) {
  double ms = s.form == schedules::Form::materialized ? 40.0
              : s.form == schedules::Form::fused      ? 6.0
                                                      : 5.0;
  auto off = [](double value, double best) { return std::abs(std::log2(value / best)); };
  ms *= 1.0 + 0.15 * off(s.query_tile, 96) + 0.1 * off(s.key_block, 192);
  ms *= 1.0 + 0.05 * std::abs(s.register_rows * s.register_vectors - 12);
  ms *= 1.0 + 0.04 * off(s.unroll, 2) + 0.2 * off(s.kv_splits, 1);
  ms *= 1.0 + 0.03 * off(schedules::effective_pv_vectors(s), 4) +
        0.03 * off(schedules::effective_pv_rows(s), 4);
  if (s.pv_chunk > 0) ms *= 0.9 + 0.03 * off(s.pv_chunk, 32);
  if (s.parallel.size() < 3) ms *= 1.3;
  if (!s.skip_masked_blocks) ms *= 1.8;
  if (s.q_copy_at == schedules::StoreLevel::root) ms *= 1.05;
  return ms;
}

// A tuning run of `candidates` candidates at B1 L2048, each "measured" by
// synthetic_ms: nothing compiles and no baseline runs.
inline TuneOptions simulated_tuning(const std::string& spec, size_t candidates, uint32_t seed) {
  TuneOptions options;
  options.spec = AttentionSpec::parse(spec);
  options.target = Halide::Target("x86-64-linux-avx-avx2-f16c-fma-sse41");
  options.shape = {1, 2048, 2048};
  options.seed = seed;
  options.budget_seconds = 1e9;
  options.max_candidates = candidates;
  options.confirm_rounds = 0;  // these timings never vary: nothing to confirm
  options.simulate = [](const schedules::Schedule& s) {
    const double ms = synthetic_ms(s);
    return Outcome{Status::ok, ms, ms, ms, ""};
  };
  return options;
}

}  // namespace attnforge::autotune
