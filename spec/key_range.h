// The keys a query may see under a spec's positional mask, written once for
// plain integers (benchmarks, FLOP counts) and for Halide Exprs (the
// algorithm forms). Key padding enters as the number of valid keys; bias and
// ALiBi never hide a key.
#pragma once

#include <algorithm>

#include "attention_spec.h"

namespace attnforge {

// min and max for an index type: here for integers; attention_terms.h adds Expr.
template <typename Index>
struct IndexOps;

template <>
struct IndexOps<long> {
  static long min(long a, long b) { return std::min(a, b); }
  static long max(long a, long b) { return std::max(a, b); }
};

// Query i's position on the key axis: i top-left aligned, or i + valid_keys - Lq
// bottom-right aligned (the last query meets the last valid key).
template <typename Index>
Index aligned_position(const AttentionSpec& spec, const Index& query, const Index& valid_keys,
                       const Index& q_len) {
  if (spec.alignment == Alignment::top_left) return query;
  return query + valid_keys - q_len;
}

// Keys [begin, end) seen by any query whose aligned position lies in
// [first_position, last_position]; for one query, exactly the keys it sees.
template <typename Index>
struct KeyRange {
  Index begin;
  Index end;  // exclusive; end <= begin means none
};

// A window mask's sizes: the spec's, or a call's where the spec takes them per call.
template <typename Index>
struct WindowSizes {
  Index left;
  Index right;
};

template <typename Index>
WindowSizes<Index> compiled_window(const AttentionSpec& spec) {
  return {Index(spec.window_left), Index(spec.window_right)};
}

template <typename Index>
KeyRange<Index> visible_key_range(const AttentionSpec& spec, const Index& first_position,
                                  const Index& last_position, const Index& valid_keys,
                                  const WindowSizes<Index>& window) {
  KeyRange<Index> range{Index(0), valid_keys};
  if (spec.mask == PositionMask::causal) {
    range.end = IndexOps<Index>::min(valid_keys, last_position + 1);
  } else if (spec.mask == PositionMask::window) {
    range.begin = IndexOps<Index>::max(first_position - window.left, Index(0));
    range.end = IndexOps<Index>::min(valid_keys, last_position + window.right + 1);
  }
  return range;
}

// The keys one query row sees, and how many; `window` for a spec whose
// window is given per call.
inline KeyRange<long> query_keys(const AttentionSpec& spec, long query, long q_len, long valid_keys,
                                 WindowSizes<long> window = {0, 0}) {
  long position = aligned_position<long>(spec, query, valid_keys, q_len);
  if (!spec.run_time_window) window = compiled_window<long>(spec);
  return visible_key_range<long>(spec, position, position, valid_keys, window);
}
inline long key_count(const KeyRange<long>& keys) {
  return std::max(0L, keys.end - keys.begin);
}

}  // namespace attnforge
