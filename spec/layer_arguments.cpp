#include "layer_arguments.h"

namespace attnforge {

namespace {

bool always(const LayerSpec&) {
  return true;
}
bool self(const LayerSpec& s) {
  return s.self_attention;
}
bool self_biased(const LayerSpec& s) {
  return s.self_attention && s.projection_bias;
}
bool cross(const LayerSpec& s) {
  return !s.self_attention;
}
bool cross_biased(const LayerSpec& s) {
  return !s.self_attention && s.projection_bias;
}
bool biased(const LayerSpec& s) {
  return s.projection_bias;
}

}  // namespace

const std::array<LayerArgumentSlot, 20>& layer_argument_table() {
  using A = LayerArgument;
  using L = LayerArguments;
  constexpr ArgumentElement f32 = ArgumentElement::float32;
  static const std::array<LayerArgumentSlot, 20> table = {{
      {A::x, "x", f32, 3, false, self, &L::x_q},
      {A::w_qkv, "w_qkv", f32, 2, false, self, &L::w_qkv},
      {A::b_qkv, "b_qkv", f32, 1, false, self_biased, &L::b_qkv},
      {A::x_q, "x_q", f32, 3, false, cross, &L::x_q},
      {A::x_kv, "x_kv", f32, 3, false, cross, &L::x_kv},
      {A::w_q, "w_q", f32, 2, false, cross, &L::w_q},
      {A::w_k, "w_k", f32, 2, false, cross, &L::w_k},
      {A::w_v, "w_v", f32, 2, false, cross, &L::w_v},
      {A::b_q, "b_q", f32, 1, false, cross_biased, &L::b_q},
      {A::b_k, "b_k", f32, 1, false, cross_biased, &L::b_k},
      {A::b_v, "b_v", f32, 1, false, cross_biased, &L::b_v},
      {A::w_o, "w_o", f32, 2, false, always, &L::w_o},
      {A::b_o, "b_o", f32, 1, false, biased, &L::b_o},
      {A::key_lengths, "key_lengths", ArgumentElement::int32, 1, false,
       [](const LayerSpec& s) { return s.attention.key_padding; }, &L::key_lengths},
      {A::bias, "bias", f32, 4, false,
       [](const LayerSpec& s) { return s.attention.bias == BiasKind::tensor; }, &L::bias},
      {A::alibi_slopes, "alibi_slopes", f32, 1, false,
       [](const LayerSpec& s) { return s.attention.bias == BiasKind::alibi; }, &L::alibi_slopes},
      {A::scale, "scale", f32, 0, false, always, nullptr},
      {A::out, "out", f32, 3, true, always, &L::out},
      {A::weights, "weights", f32, 4, true,
       [](const LayerSpec& s) { return s.weights == LayerWeights::per_head; }, &L::weights},
      {A::weights, "weights", f32, 3, true,
       [](const LayerSpec& s) { return s.weights == LayerWeights::averaged; }, &L::weights},
  }};
  return table;
}

KernelArgv layer_argv(const LayerSpec& spec, LayerArguments& args) {
  return argv_of(layer_argument_table(), spec, args);
}

}  // namespace attnforge
