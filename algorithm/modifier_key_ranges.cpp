#include "modifier_key_ranges.h"

#include <string>
#include <vector>

#include "attention_terms.h"
#include "modifier_registry.h"

namespace attnforge {

using Halide::Expr;

bool has_mask_rule(const AttentionSpec& spec) {
  return spec.modified() && static_cast<bool>(modifier_of(spec).mask);
}

// The rule written over stand-in tensors: whether it names the head, in an
// index or through a tensor it reads.
bool mask_rule_reads_head(const AttentionSpec& spec) {
  if (!has_mask_rule(spec)) return false;
  AttentionInputs probe;
  probe.q_len = Halide::Var("q_len_probe");
  probe.kv_len = Halide::Var("kv_len_probe");
  for (const ModifierTensor& tensor : modifier_of(spec).tensors) {
    Halide::Func stand_in(tensor.name);
    stand_in(std::vector<Halide::Var>(tensor.dims.size())) = Halide::cast(tensor.type, 0);
    probe.modifier_tensors[tensor.name] = stand_in;
  }
  const Halide::Var j("j_probe"), i("i_probe"), h("h_probe"), b("b_probe");
  const Expr rule = AttentionTerms(spec, probe).modifier_mask(j, i, h, b);
  return Halide::Internal::expr_uses_var(rule, h.name());
}

int key_range_heads(const AttentionSpec& spec) {
  return mask_rule_reads_head(spec) ? spec.heads : 1;
}

Expr combined_key_range(KeyRangeValue n, const Expr& a, const Expr& b) {
  return n == key_range_begin ? Halide::min(a, b) : Halide::max(a, b);
}

namespace {

// Value n of an entry.
Expr entry_value(const Expr& n, const Expr (&values)[kKeyRangeValues]) {
  return Halide::select(n == key_range_begin, values[key_range_begin], values[key_range_end]);
}

}  // namespace

ModifierKeyRanges build_modifier_key_ranges(const AttentionSpec& spec, const AttentionInputs& in,
                                            const AttentionVars& v) {
  if (!has_mask_rule(spec)) {
    throw SpecError("spec", spec.to_string() + " has no modifier with a mask rule");
  }
  ModifierKeyRanges f;
  const AttentionTerms terms(spec, in);
  const int L = kKeyRangeLanes;
  f.over_chunks = Halide::RDom(0, (in.kv_len + L - 1) / L, "over_chunks");
  const Expr key = f.over_chunks.x * L + f.lane;
  const Expr head = mask_rule_reads_head(spec) ? Expr(v.h) : Expr(0);
  // Keys past Lk read the tensors' edge (they are clamped) and are not seen.
  const Expr seen = key < in.kv_len && terms.modifier_mask(key, v.i, head, v.b);

  // Keys rise along a lane: the first seen is kept, the last replaced.
  f.lanes(f.lane, v.i, v.h, v.b) = {in.kv_len, 0};
  const Halide::FuncRef old = f.lanes(f.lane, v.i, v.h, v.b);
  f.lanes(f.lane, v.i, v.h, v.b) = {Halide::select(seen, Halide::min(old[0], key), old[0]),
                                    Halide::select(seen, key + 1, old[1])};
  Expr begin = f.lanes(0, v.i, v.h, v.b)[0], end = f.lanes(0, v.i, v.h, v.b)[1];
  for (int lane = 1; lane < L; ++lane) {
    begin = Halide::min(begin, f.lanes(lane, v.i, v.h, v.b)[0]);
    end = Halide::max(end, f.lanes(lane, v.i, v.h, v.b)[1]);
  }
  // A row that sees no key: [Lk, 0), which leaves the union unchanged.
  const Expr row[kKeyRangeValues] = {begin, end};
  f.levels.emplace_back("key_ranges_level0");
  f.levels[0](f.n, v.i, v.h, v.b) = entry_value(f.n, row);
  for (int level = 1; level < kKeyRangeLevels; ++level) {
    const Halide::Func& below = f.levels[level - 1];
    const Expr next = Halide::min(v.i + (1 << (level - 1)), in.q_len - 1);
    Expr values[kKeyRangeValues];
    for (int n = 0; n < kKeyRangeValues; ++n) {
      const auto value = static_cast<KeyRangeValue>(n);
      values[n] = combined_key_range(value, below(n, v.i, v.h, v.b), below(n, next, v.h, v.b));
    }
    f.levels.emplace_back("key_ranges_level" + std::to_string(level));
    f.levels[level](f.n, v.i, v.h, v.b) = entry_value(f.n, values);
  }
  Expr table = f.levels.back()(f.n, v.i, v.h, v.b);
  for (int level = kKeyRangeLevels - 2; level >= 0; --level) {
    table = Halide::select(f.level == level, f.levels[level](f.n, v.i, v.h, v.b), table);
  }
  f.ranges(f.n, v.i, f.level, v.h, v.b) = table;
  return f;
}

Expr key_range_of_rows(const Halide::Func& ranges, KeyRangeValue n, const Expr& first, int rows,
                       const Expr& q_len, const Expr& h, const Expr& b) {
  int level = 0;
  while ((2 << level) <= rows) ++level;
  const Expr second = Halide::min(first + (rows - (1 << level)), q_len - 1);
  const Expr a = ranges(n, first, level, h, b);
  if (rows == (1 << level)) return a;
  return combined_key_range(n, a, ranges(n, second, level, h, b));
}

}  // namespace attnforge
