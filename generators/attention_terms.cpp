#include "attention_terms.h"

#include <vector>

namespace attnforge {

using Halide::Expr;

Halide::Type storage_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return Halide::Float(32);
    case DType::f16:
      return Halide::Float(16);
    case DType::bf16:
      return Halide::BFloat(16);
  }
  return Halide::Float(32);
}

AttentionTerms::AttentionTerms(const AttentionSpec& spec, const AttentionInputs& inputs)
    : spec_(spec), inputs_(inputs) {}

Expr AttentionTerms::valid_keys(const Expr& b) const {
  return spec_.key_padding ? inputs_.key_lengths(b) : inputs_.kv_len;
}

Expr AttentionTerms::aligned_position(const Expr& i, const Expr& b) const {
  if (spec_.alignment == Alignment::top_left) return i;
  return i + valid_keys(b) - inputs_.q_len;
}

Expr AttentionTerms::visible(const Expr& j, const Expr& i, const Expr& b) const {
  std::vector<Expr> conditions;
  if (spec_.mask == PositionMask::causal) {
    conditions.push_back(j <= aligned_position(i, b));
  } else if (spec_.mask == PositionMask::window) {
    Expr p = aligned_position(i, b);
    conditions.push_back(j >= p - spec_.window_left && j <= p + spec_.window_right);
  }
  if (spec_.key_padding) conditions.push_back(j < inputs_.key_lengths(b));
  if (conditions.empty()) return Halide::Internal::const_true();
  Expr seen = conditions[0];
  for (size_t n = 1; n < conditions.size(); ++n) seen = seen && conditions[n];
  return seen;
}

Expr AttentionTerms::key_range_begin(const Expr& first_query, const Expr& b) const {
  if (spec_.mask != PositionMask::window) return 0;
  return Halide::max(aligned_position(first_query, b) - spec_.window_left, 0);
}

Expr AttentionTerms::key_range_end(const Expr& last_query, const Expr& b) const {
  Expr end = valid_keys(b);
  if (spec_.mask == PositionMask::causal) {
    end = Halide::min(end, aligned_position(last_query, b) + 1);
  } else if (spec_.mask == PositionMask::window) {
    end = Halide::min(end, aligned_position(last_query, b) + spec_.window_right + 1);
  }
  return end;
}

Expr AttentionTerms::biased(const Expr& scaled, const Expr& j, const Expr& i, const Expr& h,
                            const Expr& b) const {
  Expr value = scaled;
  if (spec_.bias == BiasKind::tensor) {
    value += to_f32(inputs_.bias(j, i, h, b));
  } else if (spec_.bias == BiasKind::alibi) {
    Expr distance = Halide::cast<float>(Halide::abs(j - aligned_position(i, b)));
    value -= inputs_.alibi_slopes(h) * distance;
  }
  return value;
}

Expr AttentionTerms::masked_logit(const Expr& scaled, const Expr& j, const Expr& i, const Expr& h,
                                  const Expr& b) const {
  Expr value = biased(scaled, j, i, h, b);
  if (spec_.mask == PositionMask::none && !spec_.key_padding) return value;
  return Halide::select(visible(j, i, b), value, kMaskedLogit);
}

Expr AttentionTerms::row_has_keys(const Expr& row_max) {
  return row_max > kMaskedLogit;
}

Expr AttentionTerms::kv_head(const Expr& h) const {
  if (spec_.group_size() == 1) return h;
  return h / spec_.group_size();
}

Expr AttentionTerms::to_f32(const Expr& value) {
  return Halide::cast<float>(value);
}

Expr AttentionTerms::to_storage(const Expr& value) const {
  return Halide::cast(storage_type(), value);
}

Halide::Type AttentionTerms::storage_type() const {
  return storage_type_of(spec_.dtype);
}

}  // namespace attnforge
