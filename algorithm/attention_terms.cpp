#include "attention_terms.h"

#include <limits>

#include "modifier_registry.h"
#include "softcap.h"
#include "spec/dtype_traits.h"

namespace attnforge {

using Halide::Expr;

namespace {

// A modifier's view of the inputs' tensors.
class InputTensors : public ModifierTensors {
 public:
  explicit InputTensors(const std::map<std::string, Halide::Func>& tensors) : tensors_(tensors) {}
  Halide::Func operator()(const std::string& name) const override {
    auto found = tensors_.find(name);
    if (found == tensors_.end()) {
      throw SpecError("modifier", "the modifier reads a tensor it does not declare: " + name);
    }
    return found->second;
  }

 private:
  const std::map<std::string, Halide::Func>& tensors_;
};

}  // namespace

Halide::Type storage_type_of(DType dtype) {
  return Halide::Type(traits_of(dtype).halide_type);
}

AttentionTerms::AttentionTerms(const AttentionSpec& spec, const AttentionInputs& inputs)
    : spec_(spec),
      inputs_(inputs),
      window_(spec.run_time_window ? WindowSizes<Expr>{inputs.window_left, inputs.window_right}
                                   : compiled_window<Expr>(spec)),
      modifier_(spec.modified() ? &modifier_of(spec) : nullptr) {}

ModifierIndex AttentionTerms::modifier_index(const Expr& j, const Expr& i, const Expr& h,
                                             const Expr& b) const {
  return {b, h, i, j, inputs_.q_len, inputs_.kv_len};
}

Expr AttentionTerms::valid_keys(const Expr& b) const {
  return spec_.key_padding ? inputs_.key_lengths(b) : inputs_.kv_len;
}

Expr AttentionTerms::aligned_position(const Expr& i, const Expr& b) const {
  return attnforge::aligned_position<Expr>(spec_, i, valid_keys(b), inputs_.q_len);
}

Expr AttentionTerms::visible(const Expr& j, const Expr& i, const Expr& b) const {
  if (spec_.mask == PositionMask::none && !spec_.key_padding) {
    return Halide::Internal::const_true();
  }
  Expr p = aligned_position(i, b);
  KeyRange<Expr> keys = visible_key_range<Expr>(spec_, p, p, valid_keys(b), window_);
  if (spec_.mask == PositionMask::window) return j >= keys.begin && j < keys.end;
  return j < keys.end;  // begin is 0
}

Expr AttentionTerms::key_range_begin(const Expr& first_query, const Expr& b) const {
  Expr first = aligned_position(first_query, b);
  return visible_key_range<Expr>(spec_, first, first, valid_keys(b), window_).begin;
}

Expr AttentionTerms::key_range_end(const Expr& last_query, const Expr& b) const {
  Expr last = aligned_position(last_query, b);
  return visible_key_range<Expr>(spec_, last, last, valid_keys(b), window_).end;
}

// Query i sees key k where k <= p(i) (causal) or p(i) - left <= k <= p(i) +
// right (window), p(i) = i + offset its aligned position; no query sees a
// key at or past the valid ones.
KeyRange<Expr> AttentionTerms::query_range(const Expr& first_key, const Expr& last_key,
                                           const Expr& b) const {
  const Expr offset = aligned_position(Expr(0), b);
  Expr begin = 0, end = inputs_.q_len;
  if (spec_.mask == PositionMask::causal) {
    begin = Halide::max(first_key - offset, 0);
  } else if (spec_.mask == PositionMask::window) {
    begin = Halide::max(first_key - window_.right - offset, 0);
    end = Halide::min(last_key + window_.left + 1 - offset, inputs_.q_len);
  }
  if (spec_.key_padding) end = Halide::select(first_key < valid_keys(b), end, 0);
  return {begin, end};
}

// A bottom-right aligned position grows with the valid keys: the first query
// is placed as for none, the last as for all Lk.
Expr AttentionTerms::key_range_begin_any_length(const Expr& first_query) const {
  Expr first = attnforge::aligned_position<Expr>(spec_, first_query, 0, inputs_.q_len);
  return visible_key_range<Expr>(spec_, first, first, inputs_.kv_len, window_).begin;
}

Expr AttentionTerms::key_range_end_any_length(const Expr& last_query) const {
  Expr last = attnforge::aligned_position<Expr>(spec_, last_query, inputs_.kv_len, inputs_.q_len);
  return visible_key_range<Expr>(spec_, last, last, inputs_.kv_len, window_).end;
}

Expr AttentionTerms::biased(const Expr& scaled, const Expr& j, const Expr& i, const Expr& h,
                            const Expr& b) const {
  Expr value = spec_.softcapped() ? softcapped(scaled, spec_.softcap) : scaled;
  if (modifier_ && modifier_->score) {
    value = Halide::cast<float>(modifier_->score(value, modifier_index(j, i, h, b),
                                                 InputTensors(inputs_.modifier_tensors)));
  }
  if (spec_.bias == BiasKind::tensor) {
    value += to_f32(inputs_.bias(j, i, h, b));
  } else if (spec_.bias == BiasKind::alibi) {
    Expr distance = Halide::cast<float>(Halide::abs(j - aligned_position(i, b)));
    value -= inputs_.alibi_slopes(h) * distance;
  }
  return value;
}

Expr AttentionTerms::logit_slope(const Expr& scaled) const {
  if (!spec_.softcapped()) return Expr(1.0f);
  const Expr tanh = softcapped(scaled, spec_.softcap) / spec_.softcap;
  return 1.0f - tanh * tanh;
}

Expr AttentionTerms::modifier_mask(const Expr& j, const Expr& i, const Expr& h,
                                   const Expr& b) const {
  if (!has_modifier_mask()) return Expr();
  return Halide::cast<bool>(
      modifier_->mask(modifier_index(j, i, h, b), InputTensors(inputs_.modifier_tensors)));
}

Expr AttentionTerms::masked_logit(const Expr& scaled, const Expr& j, const Expr& i, const Expr& h,
                                  const Expr& b) const {
  Expr value = biased(scaled, j, i, h, b);
  Expr seen = visible(j, i, b);
  if (has_modifier_mask()) seen = seen && modifier_mask(j, i, h, b);
  if (Halide::Internal::is_const_one(seen)) return value;
  return Halide::select(seen, value, kMaskedLogit);
}

Halide::Tuple AttentionTerms::row_output(const Expr& normalized, const Expr& max,
                                         const Expr& sum) const {
  const Expr has_keys = row_has_keys(max);
  const Expr out = to_storage(Halide::select(has_keys, normalized, 0.0f));
  if (!spec_.return_lse) return Halide::Tuple(out);
  return {out,
          Halide::select(has_keys, max + Halide::log(sum), std::numeric_limits<float>::infinity())};
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
