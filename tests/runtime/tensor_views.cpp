#include "tensor_views.h"

namespace attnforge::testing {

AttentionOptions mask_options(const AttentionSpec& spec) {
  AttentionOptions o;
  o.mask = spec.mask == PositionMask::causal   ? MaskKind::causal
           : spec.mask == PositionMask::window ? MaskKind::sliding_window
                                               : MaskKind::none;
  o.alignment = spec.alignment == Alignment::bottom_right ? MaskAlignment::bottom_right
                                                          : MaskAlignment::top_left;
  o.window_left = spec.window_left;
  o.window_right = spec.window_right;
  o.softcap = spec.softcap;
  return o;
}

RuntimeCall::RuntimeCall(const AttentionSpec& spec, AttentionCase& c)
    : RuntimeCall(spec, c.arguments()) {}

RuntimeCall::RuntimeCall(const AttentionSpec& spec, KernelArguments& args) {
  RuntimeCall& call = *this;
  call.q = view_of(*args.q);
  call.k = view_of(*args.k);
  call.v = view_of(*args.v);
  call.out = view_of(*args.out);
  AttentionOptions& o = call.options;
  o = mask_options(spec);
  o.scale = args.scale;
  if (spec.run_time_window) {
    o.window_left = args.window_left;
    o.window_right = args.window_right;
  }
  if (args.key_lengths) {
    call.key_lengths = view_of(*args.key_lengths);
    o.key_lengths = &call.key_lengths;
  }
  if (args.k_scale) {
    call.k_scale = view_of(*args.k_scale);
    call.v_scale = view_of(*args.v_scale);
    o.k_scale = &call.k_scale;
    o.v_scale = &call.v_scale;
  }
  if (args.page_table) {
    call.page_table = view_of(*args.page_table);
    o.page_table = &call.page_table;
  }
  if (args.bias) {
    call.bias = view_of(*args.bias);
    o.bias = &call.bias;
  }
  if (args.alibi_slopes) {
    call.alibi_slopes = view_of(*args.alibi_slopes);
    o.alibi_slopes = &call.alibi_slopes;
  }
  if (args.weights) {
    call.weights = view_of(*args.weights);
    o.weights = &call.weights;
  }
  if (args.lse) {
    call.lse = view_of(*args.lse);
    o.lse = &call.lse;
  }
}

BackwardRuntimeCall::BackwardRuntimeCall(const AttentionSpec& spec, BackwardCase& c) {
  BackwardArguments& args = c.arguments();
  q = view_of(*args.q);
  k = view_of(*args.k);
  v = view_of(*args.v);
  out = view_of(*args.out);
  d_out = view_of(*args.d_out);
  lse = view_of(*args.lse);
  dq = view_of(*args.dq);
  dk = view_of(*args.dk);
  dv = view_of(*args.dv);
  options = mask_options(spec);
  options.scale = args.scale;
  if (spec.run_time_window) {
    options.window_left = args.window_left;
    options.window_right = args.window_right;
  }
  if (args.key_lengths) {
    key_lengths = view_of(*args.key_lengths);
    options.key_lengths = &key_lengths;
  }
  if (args.bias) {
    bias = view_of(*args.bias);
    options.bias = &bias;
  }
  if (args.alibi_slopes) {
    alibi_slopes = view_of(*args.alibi_slopes);
    options.alibi_slopes = &alibi_slopes;
  }
  if (args.d_bias) {
    d_bias = view_of(*args.d_bias);
    d_bias_given = &d_bias;
  }
}

CudaCausalCall::CudaCausalCall()
    : q_data(1 * 8 * 3 * 64), kv_data(1 * 2 * 5 * 64), out_data(q_data.size(), 7.0f) {
  q = TensorView::contiguous(q_data.data(), ElementType::f32, {1, 8, 3, 64}, Device::cuda);
  kv = TensorView::contiguous(kv_data.data(), ElementType::f32, {1, 2, 5, 64}, Device::cuda);
  out = TensorView::contiguous(out_data.data(), ElementType::f32, {1, 8, 3, 64}, Device::cuda);
  options.mask = MaskKind::causal;
}

}  // namespace attnforge::testing
