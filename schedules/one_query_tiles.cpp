#include "one_query_tiles.h"

#include <numeric>

#include "schedule_check.h"

namespace attnforge::schedules {

std::optional<Schedule> one_query_tiles(Schedule s, const AttentionSpec& spec,
                                        const Halide::Target& target) {
  if (s.dot_axis != DotAxis::head_dim || target.has_gpu_feature()) return std::nullopt;
  const int rows = s.group_heads ? spec.group_size() : 1;
  if (s.query_tile <= rows) return std::nullopt;
  s.pv_rows = std::gcd(effective_pv_rows(s), rows);
  s.register_rows = std::gcd(s.register_rows, rows);
  s.query_tile = rows;
  if (check(s, spec, target)) return std::nullopt;
  return canonical(s);
}

}  // namespace attnforge::schedules
