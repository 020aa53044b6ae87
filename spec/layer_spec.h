// LayerSpec: one whole multi-head attention layer, as torch.nn.MultiheadAttention
// computes it: input projections, scaled dot-product attention over the heads,
// output projection. Sequence lengths and batch are run-time values.
#pragma once

#include <string>
#include <string_view>

#include "attention_spec.h"

namespace attnforge {

// What the layer returns besides its output, like need_weights.
enum class LayerWeights { none, per_head, averaged };

struct LayerSpec {
  // The attention between the projections; its head_dim is d_model / heads.
  AttentionSpec attention;
  int d_model = 64;
  // Self-attention reads one input and projects it with one packed QKV weight;
  // cross-attention reads x_q and x_kv with separate W_q, W_k, W_v.
  bool self_attention = true;
  // Biases on all four projections (torch's bias=True).
  bool projection_bias = true;
  LayerWeights weights = LayerWeights::none;

  // The spec of a layer with `heads` heads of d_model / heads each.
  static LayerSpec make(int d_model, int heads, int kv_heads);

  // Throws SpecError naming the first invalid field (d_model not divisible by
  // heads names d_model).
  void validate() const;

  int head_dim() const { return attention.head_dim; }
  // Output features of the packed QKV projection: (H + 2 H_kv) D.
  int qkv_features() const { return (attention.heads + 2 * attention.kv_heads) * head_dim(); }

  // Canonical string, e.g. "self.dm512.causal.mha8.d64.f32";
  // parse(to_string()) == *this.
  std::string to_string() const;
  static LayerSpec parse(std::string_view text);

  bool operator==(const LayerSpec& other) const;
  bool operator!=(const LayerSpec& other) const { return !(*this == other); }
};

extern const char* const kLayerSpecGrammar;

// Whether `text` is written as a layer spec (it starts with its kind), so that
// it is parsed as one rather than as an attention spec.
bool names_a_layer(std::string_view text);

}  // namespace attnforge
