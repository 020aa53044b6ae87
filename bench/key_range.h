// The keys one query row may see under a spec's position mask, as a half-open
// range. Causal and window masks leave a contiguous range, which both the
// OpenBLAS peer (softmax over the range only) and the FLOP count rely on.
#pragma once

#include <algorithm>

#include "generators/attention_spec.h"

namespace attnforge::bench {

struct KeyRange {
  long begin = 0;
  long end = 0;  // exclusive; end <= begin means no key is visible
  long size() const { return std::max(0L, end - begin); }
};

// Ignores key padding and bias, which depend on run-time data.
inline KeyRange visible_keys(const AttentionSpec& spec, long query, long q_len, long kv_len) {
  const long position = spec.alignment == Alignment::top_left ? query : query + kv_len - q_len;
  KeyRange range{0, kv_len};
  if (spec.mask == PositionMask::causal) {
    range.end = std::min(kv_len, position + 1);
  } else if (spec.mask == PositionMask::window) {
    range.begin = std::max(0L, position - spec.window_left);
    range.end = std::min(kv_len, position + spec.window_right + 1);
  }
  range.end = std::max(range.end, range.begin);
  return range;
}

}  // namespace attnforge::bench
