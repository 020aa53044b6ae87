#include "bench/mask_census.h"

#include <Halide.h>

#include <vector>

#include "algorithm/attention_inputs.h"
#include "algorithm/attention_terms.h"
#include "algorithm/modifier_key_ranges.h"
#include "algorithm/modifier_registry.h"

namespace attnforge::bench {

Halide::Runtime::Buffer<uint8_t> attended_pairs_of(const AttentionSpec& spec,
                                                   const KernelArguments& args) {
  const int q_len = args.q->dim[1].extent, batch = args.q->dim[3].extent;
  const int kv_len =
      spec.paged() ? args.page_table->dim[0].extent * spec.page_size : args.k->dim[1].extent;
  AttentionInputs in;
  in.q_len = q_len;
  in.kv_len = kv_len;
  in.window_left = args.window_left;
  in.window_right = args.window_right;
  // The call's tensors, wrapped (not copied) as the Funcs read them.
  std::vector<Halide::Buffer<>> tensors;
  if (spec.key_padding) {
    tensors.emplace_back(*args.key_lengths);
    in.key_lengths = Halide::Func(tensors.back());
  }
  if (spec.modified()) {
    const std::vector<ModifierTensor>& declared = modifier_of(spec).tensors;
    for (size_t n = 0; n < declared.size() && n < args.modifier_tensor_count; ++n) {
      tensors.emplace_back(*args.modifier_tensors[n]);
      in.modifier_tensors[declared[n].name] =
          Halide::BoundaryConditions::repeat_edge(tensors.back());
    }
  }
  const AttentionTerms terms(spec, in);
  const AttentionVars v;
  Halide::Expr attended = terms.visible(v.j, v.i, v.b);
  if (terms.has_modifier_mask()) attended = attended && terms.modifier_mask(v.j, v.i, v.h, v.b);
  Halide::Func pairs("attended_pairs");
  pairs(v.j, v.i, v.h, v.b) = Halide::cast<uint8_t>(attended);
  pairs.parallel(v.i).vectorize(v.j, 16, Halide::TailStrategy::GuardWithIf);
  Halide::Runtime::Buffer<uint8_t> out(kv_len, q_len, key_range_heads(spec), batch);
  pairs.realize(out, Halide::get_host_target());
  return out;
}

double attended_pair_count(const AttentionSpec& spec,
                           const Halide::Runtime::Buffer<uint8_t>& attended) {
  double count = 0;
  attended.for_each_value([&](uint8_t pair) { count += pair; });
  return count * spec.heads / attended.dim(2).extent();
}

}  // namespace attnforge::bench
