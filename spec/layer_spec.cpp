#include "layer_spec.h"

#include <fmt/format.h>

#include <string>

namespace attnforge {

const char* const kLayerSpecGrammar =
    "(self|cross).dm<d_model>['.nobias']['.avgweights'].<attention spec> where the attention "
    "spec's head dim is d_model / heads, its dtype f32, and '.avgweights' needs its '.weights' "
    "(e.g. self.dm512.causal.mha8.d64.f32)";

namespace {

constexpr int kMaxModelDim = 1 << 16;

// Removes `prefix` and the dot after it from the front of `text` when present.
bool consume(std::string_view& text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix || text.size() <= prefix.size() ||
      text[prefix.size()] != '.') {
    return false;
  }
  text.remove_prefix(prefix.size() + 1);
  return true;
}

}  // namespace

bool names_a_layer(std::string_view text) {
  return text.substr(0, 5) == "self." || text.substr(0, 6) == "cross.";
}

LayerSpec LayerSpec::make(int d_model, int heads, int kv_heads) {
  LayerSpec spec;
  spec.d_model = d_model;
  spec.attention.heads = heads;
  spec.attention.kv_heads = kv_heads;
  if (heads > 0 && d_model % heads == 0) spec.attention.head_dim = d_model / heads;
  spec.validate();
  return spec;
}

void LayerSpec::validate() const {
  if (d_model < 1 || d_model > kMaxModelDim) {
    throw SpecError("d_model", fmt::format("{}; expected 1..{}", d_model, kMaxModelDim));
  }
  attention.validate();
  if (d_model % attention.heads != 0) {
    throw SpecError("d_model", fmt::format("d_model {} is not divisible by the {} heads", d_model,
                                           attention.heads));
  }
  if (attention.head_dim != d_model / attention.heads) {
    throw SpecError("head_dim", fmt::format("{}; a layer's head dim is d_model / heads = {}",
                                            attention.head_dim, d_model / attention.heads));
  }
  if (attention.dtype != DType::f32) {
    throw SpecError("dtype", fmt::format("'{}'; the layer computes and stores f32",
                                         attnforge::to_string(attention.dtype)));
  }
  if (attention.return_lse) {
    throw SpecError("lse", "a layer returns no log-sum-exp; its attention spec has no '.lse'");
  }
  if (attention.return_weights != (weights != LayerWeights::none)) {
    throw SpecError("weights", "the attention returns weights exactly when the layer does");
  }
  if (attention.paged()) {
    throw SpecError("page_size", "a layer projects its keys and values; it reads no paged cache");
  }
  if (attention.modified()) {
    throw SpecError("modifier", "a layer takes no modifier; run attention with it instead");
  }
  if (attention.run_time_window) {
    throw SpecError("window", "a layer's window is compiled in: write window<L>_<R>");
  }
}

std::string LayerSpec::to_string() const {
  validate();
  std::string text = fmt::format("{}.dm{}", self_attention ? "self" : "cross", d_model);
  if (!projection_bias) text += ".nobias";
  if (weights == LayerWeights::averaged) text += ".avgweights";
  return text + "." + attention.to_string();
}

LayerSpec LayerSpec::parse(std::string_view text) {
  const std::string original(text);
  LayerSpec spec;
  if (consume(text, "self")) {
    spec.self_attention = true;
  } else if (consume(text, "cross")) {
    spec.self_attention = false;
  } else {
    throw SpecError("kind", fmt::format("'{}' must start with self or cross; grammar: {}", original,
                                        kLayerSpecGrammar));
  }
  const size_t dot = text.find('.');
  const std::string model(text.substr(0, dot));
  const bool has_model = model.size() > 2 && model.size() <= 8 && model.compare(0, 2, "dm") == 0 &&
                         model.find_first_not_of("0123456789", 2) == std::string::npos;
  const int d_model = has_model ? std::stoi(model.substr(2)) : 0;
  if (d_model <= 0) {
    throw SpecError("d_model", fmt::format("'{}' needs dm<d_model> after the kind; grammar: {}",
                                           original, kLayerSpecGrammar));
  }
  if (dot == std::string_view::npos) {
    throw SpecError("mask", fmt::format("'{}' ends before the attention spec; grammar: {}",
                                        original, kLayerSpecGrammar));
  }
  spec.d_model = d_model;
  text.remove_prefix(dot + 1);
  spec.projection_bias = !consume(text, "nobias");
  const bool averaged = consume(text, "avgweights");
  spec.attention = AttentionSpec::parse(text);
  if (spec.attention.return_weights) {
    spec.weights = averaged ? LayerWeights::averaged : LayerWeights::per_head;
  } else if (averaged) {
    throw SpecError("weights", "'.avgweights' needs the attention spec's '.weights'");
  }
  spec.validate();
  if (spec.to_string() != original) {
    throw SpecError("d_model",
                    fmt::format("'{}' is not canonical; write '{}'", original, spec.to_string()));
  }
  return spec;
}

bool LayerSpec::operator==(const LayerSpec& o) const {
  return attention == o.attention && d_model == o.d_model && self_attention == o.self_attention &&
         projection_bias == o.projection_bias && weights == o.weights;
}

}  // namespace attnforge
