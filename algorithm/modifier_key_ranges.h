// Which keys a modifier's mask rule lets query rows see, computed per call by
// a small kernel of its own (FlexAttention's BlockMask): the attention forms
// skip the key blocks that no row of a query tile sees.
//
// The table holds, for every run of 2^level rows from row i, the keys from
// the first any of them sees to the last: any tile of rows is then two
// entries of one level, so one table serves kernels of every tile size.
#pragma once

#include <Halide.h>

#include "attention_inputs.h"
#include "spec/attention_spec.h"
#include "spec/key_range_table.h"

namespace attnforge {

// The table's keys are taken this many at a time, one partial range per lane.
constexpr int kKeyRangeLanes = 16;

struct ModifierKeyRanges {
  Halide::Var lane{"lane"}, n{"n"}, level{"level"};
  // (lane, i, h, b) Tuple(first key, one past the last) of the keys
  // chunk * kKeyRangeLanes + lane that row i sees.
  Halide::Func lanes{"key_range_lanes"};
  Halide::RDom over_chunks;
  // (n, i, h, b) for each level: the entry of rows [i, i + 2^level) (those < Lq).
  std::vector<Halide::Func> levels;
  // (n, i, level, h, b) int32, n a KeyRangeValue: the table.
  Halide::Func ranges{"key_ranges"};
};

// Whether `spec`'s modifier has a mask rule, and whether that rule reads the
// query head (else the table has one head).
bool has_mask_rule(const AttentionSpec& spec);
bool mask_rule_reads_head(const AttentionSpec& spec);
// The table's head extent for `spec`.
int key_range_heads(const AttentionSpec& spec);

// The table of `spec`'s mask rule over `inputs`' modifier tensors, q_len and kv_len.
ModifierKeyRanges build_modifier_key_ranges(const AttentionSpec& spec,
                                            const AttentionInputs& inputs, const AttentionVars& v);

// The entry of rows [first, first + rows) of a table `ranges` (n, i, level,
// h, b), those past Lq left out, for `rows` <= 2^(kKeyRangeLevels - 1):
// value n of the union of two runs of 2^level rows.
Halide::Expr key_range_of_rows(const Halide::Func& ranges, KeyRangeValue n,
                               const Halide::Expr& first, int rows, const Halide::Expr& q_len,
                               const Halide::Expr& h, const Halide::Expr& b);

// How two entries' values n combine into the entry of their rows together.
Halide::Expr combined_key_range(KeyRangeValue n, const Halide::Expr& a, const Halide::Expr& b);

}  // namespace attnforge
