#include "backward_arguments.h"

namespace attnforge {

void* scalar_address(BackwardArguments& args, BackwardArgument argument) {
  if (argument == BackwardArgument::window_left) return &args.window_left;
  if (argument == BackwardArgument::window_right) return &args.window_right;
  return &args.scale;
}

const std::array<BackwardArgumentSlot, 16>& backward_argument_table() {
  using A = BackwardArgument;
  using E = ArgumentElement;
  using Args = BackwardArguments;
  auto always = [](const AttentionSpec&) { return true; };
  static const std::array<BackwardArgumentSlot, 16> table = {{
      {A::q, "q", E::storage, 4, false, always, &Args::q},
      {A::k, "k", E::storage, 4, false, always, &Args::k},
      {A::v, "v", E::storage, 4, false, always, &Args::v},
      {A::out, "out", E::storage, 4, false, always, &Args::out},
      {A::d_out, "d_out", E::storage, 4, false, always, &Args::d_out},
      {A::lse, "lse", E::float32, 3, false, always, &Args::lse},
      {A::key_lengths, "key_lengths", E::int32, 1, false,
       [](const AttentionSpec& s) { return s.key_padding; }, &Args::key_lengths},
      {A::bias, "bias", E::storage, 4, false,
       [](const AttentionSpec& s) { return s.bias == BiasKind::tensor; }, &Args::bias},
      {A::alibi_slopes, "alibi_slopes", E::float32, 1, false,
       [](const AttentionSpec& s) { return s.bias == BiasKind::alibi; }, &Args::alibi_slopes},
      {A::scale, "scale", E::float32, 0, false, always, nullptr},
      {A::window_left, "window_left", E::int32, 0, false,
       [](const AttentionSpec& s) { return s.run_time_window; }, nullptr},
      {A::window_right, "window_right", E::int32, 0, false,
       [](const AttentionSpec& s) { return s.run_time_window; }, nullptr},
      {A::dq, "dq", E::storage, 4, true, always, &Args::dq},
      {A::dk, "dk", E::storage, 4, true, always, &Args::dk},
      {A::dv, "dv", E::storage, 4, true, always, &Args::dv},
      {A::d_bias, "d_bias", E::storage, 4, true, [](const AttentionSpec& s) { return s.bias_grad; },
       &Args::d_bias},
  }};
  return table;
}

std::optional<SpecError> backward_misfit(const AttentionSpec& spec) {
  const std::string text = spec.to_string();
  if (spec.paged()) return SpecError("page", text + ": a paged cache has no backward kernel");
  if (spec.quantized_kv()) {
    return SpecError("kv_storage", text + ": an 8-bit cache has no backward kernel");
  }
  if (spec.return_weights) {
    return SpecError("weights", text + ": returned weights have no backward kernel");
  }
  if (spec.modified()) {
    return SpecError("modifier", text + ": a modifier has no backward kernel yet");
  }
  return std::nullopt;
}

AttentionSpec forward_spec_of(AttentionSpec backward_spec) {
  backward_spec.return_lse = true;
  backward_spec.bias_grad = false;
  return backward_spec;
}

void mark_host_inputs_dirty(BackwardArguments& args) {
  for (halide_buffer_t* input : {args.q, args.k, args.v, args.out, args.d_out, args.lse,
                                 args.key_lengths, args.bias, args.alibi_slopes}) {
    if (input && input->device == 0) input->flags |= halide_buffer_flag_host_dirty;
  }
}

KernelArgv backward_argv(const AttentionSpec& spec, BackwardArguments& args) {
  return argv_of(backward_argument_table(), spec, args);
}

}  // namespace attnforge
