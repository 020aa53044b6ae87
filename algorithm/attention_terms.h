// Expressions every algorithm form shares: which keys a query sees, the biased
// and scaled logit, the key/value head of a query head, storage-type casts.
#pragma once

#include <Halide.h>

#include "attention_inputs.h"
#include "modifier.h"
#include "spec/attention_spec.h"
#include "spec/key_range.h"

namespace attnforge {

// key_range.h's min and max for Halide index expressions.
template <>
struct IndexOps<Halide::Expr> {
  static Halide::Expr min(const Halide::Expr& a, const Halide::Expr& b) {
    return Halide::min(a, b);
  }
  static Halide::Expr max(const Halide::Expr& a, const Halide::Expr& b) {
    return Halide::max(a, b);
  }
};

class AttentionTerms {
 public:
  AttentionTerms(const AttentionSpec& spec, const AttentionInputs& inputs);

  // Whether query i of batch b may see key j (positional mask and key padding).
  Halide::Expr visible(const Halide::Expr& j, const Halide::Expr& i, const Halide::Expr& b) const;

  // A scaled score, softcapped where the spec says, through the modifier's
  // score rule, plus the spec's additive term (bias tensor or ALiBi), in f32.
  Halide::Expr biased(const Halide::Expr& scaled, const Halide::Expr& j, const Halide::Expr& i,
                      const Halide::Expr& h, const Halide::Expr& b) const;

  // The slope of biased() by `scaled`, for gradients: the softcap's
  // 1 - tanh^2 where the spec softcaps, else 1. (A modifier's score rule has
  // no slope here: the backward pass takes no modifier.)
  Halide::Expr logit_slope(const Halide::Expr& scaled) const;

  // The biased logit where visible (and the modifier's mask allows),
  // kMaskedLogit elsewhere. Each form decides
  // where the scale is applied, so `scaled` already carries it.
  Halide::Expr masked_logit(const Halide::Expr& scaled, const Halide::Expr& j,
                            const Halide::Expr& i, const Halide::Expr& h,
                            const Halide::Expr& b) const;

  // The modifier's mask rule at (j, i, h, b) as a bool; undefined where the
  // spec's modifier has none.
  Halide::Expr modifier_mask(const Halide::Expr& j, const Halide::Expr& i, const Halide::Expr& h,
                             const Halide::Expr& b) const;
  bool has_modifier_mask() const { return modifier_ && modifier_->mask; }

  // The keys [begin, end) that queries first..last of batch b can see at most:
  // where a form may skip the rest. Only bounds: visible() still decides each key.
  Halide::Expr key_range_begin(const Halide::Expr& first_query, const Halide::Expr& b) const;
  Halide::Expr key_range_end(const Halide::Expr& last_query, const Halide::Expr& b) const;
  // The same bounds for any number of valid keys up to Lk: wider where there
  // is key padding, and they read no key length.
  Halide::Expr key_range_begin_any_length(const Halide::Expr& first_query) const;
  Halide::Expr key_range_end_any_length(const Halide::Expr& last_query) const;

  // The queries [begin, end) that may see a key in [first_key, last_key] of
  // batch b: the backward's bounds, where key blocks skip the rest. Only
  // bounds, as above.
  KeyRange<Halide::Expr> query_range(const Halide::Expr& first_key, const Halide::Expr& last_key,
                                     const Halide::Expr& b) const;

  // A row's output value: `normalized` (acc / sum) in storage dtype, zeros
  // where its `max` shows it saw no key; with return_lse, a Tuple of that and
  // the row's log-sum-exp max + log(sum) in f32, +inf where it saw none.
  Halide::Tuple row_output(const Halide::Expr& normalized, const Halide::Expr& max,
                           const Halide::Expr& sum) const;

  // True when a row's running maximum shows it saw at least one key.
  static Halide::Expr row_has_keys(const Halide::Expr& row_max);

  Halide::Expr kv_head(const Halide::Expr& h) const;
  static Halide::Expr to_f32(const Halide::Expr& value);
  Halide::Expr to_storage(const Halide::Expr& value) const;
  Halide::Type storage_type() const;

 private:
  // Query i's position on the key axis: i, or i + (valid keys - Lq) bottom-right aligned.
  Halide::Expr aligned_position(const Halide::Expr& i, const Halide::Expr& b) const;
  Halide::Expr valid_keys(const Halide::Expr& b) const;

  ModifierIndex modifier_index(const Halide::Expr& j, const Halide::Expr& i, const Halide::Expr& h,
                               const Halide::Expr& b) const;

  AttentionSpec spec_;
  AttentionInputs inputs_;
  const Modifier* modifier_ = nullptr;  // the spec's, where it has one
  WindowSizes<Halide::Expr> window_;    // compiled, or the call's
};

Halide::Type storage_type_of(DType dtype);

}  // namespace attnforge
