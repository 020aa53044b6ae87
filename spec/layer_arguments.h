// The tensors and scalars of one layer call, and the argv a compiled layer
// kernel takes them in. Needs only Halide's runtime header.
#pragma once

#include <HalideRuntime.h>

#include "kernel_arguments.h"
#include "layer_spec.h"

namespace attnforge {

// Activations are (feature, position, batch) innermost first: [B, L, d_model]
// row-major. Weights are (out feature, in feature): W [in][out] row-major, so
// y = x W. Biases are [out].
struct LayerArguments {
  halide_buffer_t* x_q = nullptr;    // self-attention: the one input
  halide_buffer_t* x_kv = nullptr;   // cross-attention only
  halide_buffer_t* w_qkv = nullptr;  // self-attention: [d_model][(H + 2 H_kv) D]
  halide_buffer_t* b_qkv = nullptr;
  halide_buffer_t* w_q = nullptr;  // cross-attention: [d_model][H D]
  halide_buffer_t* w_k = nullptr;  // [d_model][H_kv D]
  halide_buffer_t* w_v = nullptr;
  halide_buffer_t* b_q = nullptr;
  halide_buffer_t* b_k = nullptr;
  halide_buffer_t* b_v = nullptr;
  halide_buffer_t* w_o = nullptr;  // [H D][d_model]
  halide_buffer_t* b_o = nullptr;
  halide_buffer_t* key_lengths = nullptr;   // as KernelArguments
  halide_buffer_t* bias = nullptr;          // (Lk, Lq, H, B)
  halide_buffer_t* alibi_slopes = nullptr;  // [H]
  float scale = 0.0f;
  halide_buffer_t* out = nullptr;      // [B, Lq, d_model]
  halide_buffer_t* weights = nullptr;  // (Lk, Lq, H, B), or (Lk, Lq, B) averaged
};

// clang-format off
enum class LayerArgument {
  x, w_qkv, b_qkv,                          // self-attention
  x_q, x_kv, w_q, w_k, w_v, b_q, b_k, b_v,  // cross-attention
  w_o, b_o, key_lengths, bias, alibi_slopes, scale, out, weights
};
// clang-format on
using LayerArgumentSlot = ArgumentSlot<LayerArgument, LayerSpec, LayerArguments>;

// A layer kernel's arguments in order (weights has a row per layout).
const std::array<LayerArgumentSlot, 20>& layer_argument_table();

// A layer's one scalar is its scale.
inline void* scalar_address(LayerArguments& args, LayerArgument) {
  return &args.scale;
}

template <typename Visit>
void for_each_layer_argument(const LayerSpec& spec, Visit&& visit) {
  for_each_needed(layer_argument_table(), spec, visit);
}

// `args` must outlive the result. Throws SpecError naming an argument the spec needs that is null.
KernelArgv layer_argv(const LayerSpec& spec, LayerArguments& args);

}  // namespace attnforge
