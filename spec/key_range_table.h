// The layout of a mask rule's key-range table (algorithm/modifier_key_ranges.h):
// int32 (value, query row, level, head, batch), innermost first. The kernel
// that computes it and the runtime that allocates it agree on these sizes.
#pragma once

namespace attnforge {

// The values of an entry: the keys [begin, end) its rows see (none: begin >= end).
enum KeyRangeValue { key_range_begin = 0, key_range_end };
constexpr int kKeyRangeValues = 2;
// Runs of 1, 2, 4, ... 256 rows: the most query rows a tile holds.
constexpr int kKeyRangeLevels = 9;

}  // namespace attnforge
