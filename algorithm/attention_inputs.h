// What every algorithm form reads: the tensors of one attention call as Halide
// Funcs plus the run-time sizes, independent of whether they come from a
// Generator's Inputs or from anywhere else.
#pragma once

#include <Halide.h>

#include <map>
#include <string>

namespace attnforge {

// Loop variables shared by every form, so schedules can name them.
struct AttentionVars {
  Halide::Var d{"d"};  // head-dim lane
  Halide::Var i{"i"};  // query position
  Halide::Var j{"j"};  // key position
  Halide::Var h{"h"};  // query head
  Halide::Var b{"b"};  // batch
};

struct AttentionInputs {
  // (d, position, head, batch) in storage dtype; k and v are indexed by key/value head.
  Halide::Func q, k, v;
  Halide::Expr q_len, kv_len;
  Halide::Expr scale;         // f32
  Halide::Func key_lengths;   // (b) int32; defined only with key padding
  Halide::Func bias;          // (j, i, h, b) storage dtype; defined only with a bias tensor
  Halide::Func alibi_slopes;  // (h) f32; defined only with ALiBi
  // A window given per call (spec.run_time_window): its sizes, int32 >= 0.
  Halide::Expr window_left, window_right;
  // A spec's modifier (algorithm/modifier.h): its tensors by name, clamped
  // to their extents.
  std::map<std::string, Halide::Func> modifier_tensors;
  // A modifier with a mask rule: (n, i, level, h, b) int32, the keys runs of
  // query rows see by the rule (modifier_key_ranges.h), so that forms skip
  // the key blocks no row of a tile sees. h runs over the query heads where
  // the rule reads the head, else over one value.
  Halide::Func modifier_key_ranges;
  bool key_ranges_per_head = false;
  // The K and V buffers k and v read, for schedules that prefetch them;
  // undefined where k and v are computed (a paged cache).
  Halide::Parameter k_buffer, v_buffer;
  // The buffers K and V rows lie in (a paged cache: its page buffers), and
  // (j, h, b) the element offset of key j's row in them, for schedules that
  // prefetch row by row (row_prefetch.h), through the page table where there is one.
  Halide::Parameter k_row_buffer, v_row_buffer;
  Halide::Func k_row, v_row;
  // A paged cache: positions per page (0 for a contiguous cache), and k and v
  // as (d, position in page, page table entry, kv head, batch), so that a form
  // can read a page of keys with one table lookup. A paged k and v read any
  // key >= 0 (keys past the table in its last page): forms need not clamp.
  int page_size = 0;
  Halide::Func k_by_page, v_by_page;
  // An 8-bit cache (kv8, kvfp8): k and v above are its rows dequantized, and
  // these its f32 levels as k and v index them (and by page), and the scales
  // per row (j, kv head, b) (and (position in page, page table entry, kv
  // head, b)), so that a form can apply a row's scale once per key instead of
  // per element (quantized_cache.h).
  Halide::Func k_levels, v_levels, k_levels_by_page, v_levels_by_page;
  Halide::Func k_scale, v_scale, k_scale_by_page, v_scale_by_page;
};

// The logit given to a key a query may not see. Finite, so that subtracting two
// of them is 0 rather than NaN, and far below any real logit.
constexpr float kMaskedLogit = -1e30f;

}  // namespace attnforge
