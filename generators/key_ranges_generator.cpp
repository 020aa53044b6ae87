// The key-range table of a spec's mask rule (algorithm/modifier_key_ranges.h),
// computed per call before the attention kernel that reads it. Its arguments:
// kv_len, the modifier's tensors (as the attention kernel takes them), and the
// table, (n, query, level, head, batch) int32.
#include <Halide.h>

#include "algorithm/attention_inputs.h"
#include "algorithm/modifier_key_ranges.h"
#include "modifier_inputs.h"
#include "schedules/key_ranges_schedule.h"
#include "spec/attention_spec.h"

namespace attnforge {
namespace {

class KeyRangesGenerator : public Halide::Generator<KeyRangesGenerator> {
 public:
  // The spec as its canonical string; its modifier must have a mask rule.
  Halide::GeneratorParam<std::string> spec{"spec", ""};

  void configure() {
    spec_ = AttentionSpec::parse(std::string(spec));
    if (!has_mask_rule(spec_)) {
      throw SpecError("spec", spec_.to_string() + " has no modifier with a mask rule");
    }
    kv_len_ = add_input<int32_t>("kv_len");
    modifier_inputs_.declare(*this, spec_);
    ranges_ = add_output<Halide::Buffer<int32_t>>("key_ranges", 5);
  }

  void generate() {
    const Halide::Expr q_len = ranges_->dim(1).extent(), batch = ranges_->dim(4).extent();
    ranges_->dim(0).set_bounds(0, kKeyRangeValues);
    ranges_->dim(1).set_min(0);
    ranges_->dim(2).set_bounds(0, kKeyRangeLevels);
    ranges_->dim(3).set_bounds(0, key_range_heads(spec_));
    ranges_->dim(4).set_min(0);
    modifier_inputs_.constrain(spec_, batch, q_len, *kv_len_);

    AttentionInputs in;
    in.q_len = q_len;
    in.kv_len = *kv_len_;
    modifier_inputs_.add_to(in);
    const AttentionVars v;
    ModifierKeyRanges f = build_modifier_key_ranges(spec_, in, v);
    (*ranges_)(f.n, v.i, f.level, v.h, v.b) = f.ranges(f.n, v.i, f.level, v.h, v.b);

    constexpr int kEstimatedLength = 2048;
    kv_len_->set_estimate(kEstimatedLength);
    modifier_inputs_.set_estimates(spec_, 1, kEstimatedLength, kEstimatedLength);
    ranges_->set_estimates({{0, kKeyRangeValues},
                            {0, kEstimatedLength},
                            {0, kKeyRangeLevels},
                            {0, key_range_heads(spec_)},
                            {0, 1}});
    schedules::schedule_key_ranges(f, v, *ranges_, get_target());
  }

 private:
  AttentionSpec spec_;
  Halide::GeneratorInput<int32_t>* kv_len_ = nullptr;
  ModifierInputs modifier_inputs_;
  Halide::GeneratorOutput<Halide::Buffer<int32_t>>* ranges_ = nullptr;
};

}  // namespace
}  // namespace attnforge

HALIDE_REGISTER_GENERATOR(attnforge::KeyRangesGenerator, key_ranges)
