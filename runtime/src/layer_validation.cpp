#include "layer_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "call_validation.h"
#include "tensor_checks.h"

namespace attnforge::runtime {

namespace {

// Every layer tensor is f32 in CPU memory; `first` names the call's first
// tensor in a device error.
Status check_tensor(const TensorView& t, const char* name, int rank, const char* expected,
                    const char* first) {
  ATTNFORGE_CHECK(check_layout(t, name, rank, expected));
  ATTNFORGE_CHECK(check_type(t, name, ElementType::f32));
  return check_device(t, name, Device::cpu, first);
}

struct Expected {
  const TensorView* view;
  const char* name;
  std::initializer_list<int64_t> extents;
  const char* text;
};

Status check_parameter(const Expected& e, const char* first) {
  if (!e.view) return Status::success();
  ATTNFORGE_CHECK(check_tensor(*e.view, e.name, static_cast<int>(e.extents.size()), e.text, first));
  return check_extents(*e.view, e.name, e.extents, e.text);
}

// Which weights the kind of layer takes: w_qkv for self-attention, w_q, w_k
// and w_v for cross-attention; the other kind's must be null. The biases are
// all given or all null, as torch's bias=True or False.
Status check_weights_given(const LayerParameters& p, bool self_attention) {
  const std::vector<NamedView> self_weights = {{p.w_qkv, "w_qkv"}, {p.w_o, "w_o"}};
  const std::vector<NamedView> self_biases = {{p.b_qkv, "b_qkv"}, {p.b_o, "b_o"}};
  const std::vector<NamedView> cross_weights = {
      {p.w_q, "w_q"}, {p.w_k, "w_k"}, {p.w_v, "w_v"}, {p.w_o, "w_o"}};
  const std::vector<NamedView> cross_biases = {
      {p.b_q, "b_q"}, {p.b_k, "b_k"}, {p.b_v, "b_v"}, {p.b_o, "b_o"}};
  std::vector<NamedView> other_kind = self_attention ? cross_weights : self_weights;
  for (const NamedView& n : self_attention ? cross_biases : self_biases) other_kind.push_back(n);
  for (const NamedView& n : other_kind) {
    if (n.view && n.view != p.w_o && n.view != p.b_o) {
      return invalid(fmt::format(
          "{}: given to a {}-attention call; self-attention (no x_kv) takes w_qkv and b_qkv, "
          "cross-attention (x_q, x_kv) takes w_q, w_k, w_v and b_q, b_k, b_v",
          n.name, self_attention ? "self" : "cross"));
    }
  }
  for (const NamedView& n : self_attention ? self_weights : cross_weights) {
    if (!n.view) return invalid(fmt::format("{}: required, got null", n.name));
  }
  const std::vector<NamedView>& biases = self_attention ? self_biases : cross_biases;
  for (const NamedView& n : biases) {
    if ((n.view != nullptr) != (biases[0].view != nullptr)) {
      const NamedView& given = n.view ? n : biases[0];
      const NamedView& missing = n.view ? biases[0] : n;
      return invalid(fmt::format("{}: null, but {} is given; the biases are all given or all null",
                                 missing.name, given.name));
    }
  }
  return Status::success();
}

// The sizes a layer call's tensors and options give: B, Lq, Lk, d_model,
// H, H_kv and D = d_model / H.
struct LayerSizes {
  int64_t b = 0, lq = 0, lk = 0, dm = 0;
  int64_t h = 0, h_kv = 0, d = 0;
};

// x (x_q) and x_kv: CPU f32 [B, L, d_model], x_kv of x_q's B and d_model.
Status check_inputs(const TensorView& x_q, const TensorView* x_kv, const char* x_name,
                    LayerSizes* s) {
  if (x_q.device != Device::cpu) {
    return invalid(fmt::format("{}: on {}; the MHA layer has CPU kernels only", x_name,
                               to_string(x_q.device)));
  }
  ATTNFORGE_CHECK(check_tensor(x_q, x_name, 3, "[B, Lq, d_model]", x_name));
  s->b = x_q.shape[0];
  s->lq = x_q.shape[1];
  s->dm = x_q.shape[2];
  s->lk = s->lq;
  if (x_kv) {
    ATTNFORGE_CHECK(check_tensor(*x_kv, "x_kv", 3, "[B, Lk, d_model]", x_name));
    s->lk = x_kv->shape[1];
    ATTNFORGE_CHECK(
        check_extents(*x_kv, "x_kv", {s->b, s->lk, s->dm}, "[B, Lk, d_model] (B, d_model of x_q)"));
  }
  return Status::success();
}

// heads and kv_heads against each other and against d_model; sets h, h_kv and d.
Status check_heads(const LayerOptions& options, const char* x_name, LayerSizes* s) {
  const int64_t h = options.heads, h_kv = options.kv_heads == 0 ? h : options.kv_heads;
  if (h < 1) return invalid(fmt::format("heads: expected the number of heads, >= 1, got {}", h));
  if (h_kv < 1 || h % h_kv != 0) {
    return invalid(fmt::format("kv_heads: {} must divide heads = {} (0: heads)", h_kv, h));
  }
  if (s->dm < 1 || s->dm % h != 0) {
    return invalid(fmt::format(
        "d_model: {}'s last dimension is {}, which the {} heads do not divide; expected a "
        "multiple of heads (D = d_model / heads)",
        x_name, s->dm, h));
  }
  s->h = h;
  s->h_kv = h_kv;
  s->d = s->dm / h;
  return Status::success();
}

// The projections' weights and biases: which are given, then each one's shape.
Status check_parameters(const LayerParameters& p, bool self_attention, const LayerSizes& s,
                        const char* x_name) {
  const int64_t dm = s.dm, h = s.h, h_kv = s.h_kv, d = s.d, qkv = (h + 2 * h_kv) * d;
  ATTNFORGE_CHECK(check_weights_given(p, self_attention));
  const Expected parameters[] = {
      {p.w_qkv, "w_qkv", {dm, qkv}, "[d_model, (H + 2 H_kv) D]"},
      {p.b_qkv, "b_qkv", {qkv}, "[(H + 2 H_kv) D]"},
      {p.w_q, "w_q", {dm, h * d}, "[d_model, H D]"},
      {p.w_k, "w_k", {dm, h_kv * d}, "[d_model, H_kv D]"},
      {p.w_v, "w_v", {dm, h_kv * d}, "[d_model, H_kv D]"},
      {p.b_q, "b_q", {h * d}, "[H D]"},
      {p.b_k, "b_k", {h_kv * d}, "[H_kv D]"},
      {p.b_v, "b_v", {h_kv * d}, "[H_kv D]"},
      {p.w_o, "w_o", {h * d, dm}, "[H D, d_model]"},
      {p.b_o, "b_o", {dm}, "[d_model]"},
  };
  for (const Expected& e : parameters) ATTNFORGE_CHECK(check_parameter(e, x_name));
  return Status::success();
}

Status check_out(const TensorView& out, const LayerSizes& s, const char* x_name) {
  ATTNFORGE_CHECK(check_tensor(out, "out", 3, "[B, Lq, d_model]", x_name));
  return check_extents(out, "out", {s.b, s.lq, s.dm}, "[B, Lq, d_model] (as x_q)");
}

// The attention weights the layer returns: per head, or averaged over heads.
Status check_weights_tensor(const TensorView& weights, bool averaged, const LayerSizes& s,
                            const char* x_name) {
  if (averaged) {
    ATTNFORGE_CHECK(check_tensor(weights, "weights", 3, "[B, Lq, Lk] (averaged)", x_name));
    return check_extents(weights, "weights", {s.b, s.lq, s.lk}, "[B, Lq, Lk] (averaged)");
  }
  ATTNFORGE_CHECK(check_tensor(weights, "weights", 4, "[B, H, Lq, Lk]", x_name));
  return check_extents(weights, "weights", {s.b, s.h, s.lq, s.lk}, "[B, H, Lq, Lk]");
}

// The attention options, in the layer's shapes: no paged cache, and weights
// that the layer returns rather than the attention call.
Status check_attention_options(const LayerOptions& options, const TensorView& x_q,
                               const LayerSizes& s, const char* x_name) {
  const AttentionOptions& o = options.attention;
  if (o.page_table) {
    return invalid(
        "page_table: the layer computes its own keys and values; it reads no paged "
        "cache");
  }
  if (o.lse) return invalid("lse: a layer returns no log-sum-exp; call attention() for it");
  if (options.average_weights && !o.weights) {
    return invalid("average_weights: set, but attention.weights is null");
  }
  if (o.weights) {
    ATTNFORGE_CHECK(check_weights_tensor(*o.weights, options.average_weights, s, x_name));
  }
  AttentionOptions without_weights = o;
  without_weights.weights = nullptr;  // checked above, in the layer's shapes
  ATTNFORGE_CHECK(check_options(without_weights, x_q, s.b, s.lq, s.lk, s.h));
  if (s.lk < 1 && s.b > 0 && s.lq > 0) {
    return invalid("x_kv: Lk is 0; attention needs at least one key");
  }
  return Status::success();
}

// out and the weights apart from every tensor the call reads.
Status check_outputs_apart(const TensorView& x_q, const TensorView* x_kv, const LayerParameters& p,
                           const TensorView& out, const AttentionOptions& o, const char* x_name) {
  const NamedView inputs[] = {{&x_q, x_name},
                              {x_kv, "x_kv"},
                              {p.w_qkv, "w_qkv"},
                              {p.b_qkv, "b_qkv"},
                              {p.w_q, "w_q"},
                              {p.w_k, "w_k"},
                              {p.w_v, "w_v"},
                              {p.b_q, "b_q"},
                              {p.b_k, "b_k"},
                              {p.b_v, "b_v"},
                              {p.w_o, "w_o"},
                              {p.b_o, "b_o"},
                              {o.key_lengths, "key_lengths"},
                              {o.bias, "bias"},
                              {o.alibi_slopes, "alibi_slopes"}};
  return check_outputs(out, o.weights, inputs);
}

// The layer kernel's spec and the call's sizes, from arguments already checked;
// the spec's own checks can still fail.
Status describe_call(const LayerParameters& p, const LayerOptions& options, bool self_attention,
                     const LayerSizes& s, ValidatedLayerCall* call) {
  const AttentionOptions& o = options.attention;
  LayerSpec& spec = call->spec;
  spec.d_model = static_cast<int>(std::min<int64_t>(s.dm, 1 << 20));
  spec.self_attention = self_attention;
  spec.projection_bias = p.b_o != nullptr;
  spec.weights = !o.weights                ? LayerWeights::none
                 : options.average_weights ? LayerWeights::averaged
                                           : LayerWeights::per_head;
  AttentionSpec& a = spec.attention;
  apply_options(o, a);
  a.heads = static_cast<int>(std::min<int64_t>(s.h, 1 << 20));
  a.kv_heads = static_cast<int>(std::min<int64_t>(s.h_kv, 1 << 20));
  a.head_dim = static_cast<int>(std::min<int64_t>(s.d, 1 << 20));
  a.dtype = DType::f32;
  try {
    spec.validate();
  } catch (const SpecError& error) {
    return invalid(error.what());
  }
  call->batch = static_cast<int>(s.b);
  call->q_len = static_cast<int>(s.lq);
  call->kv_len = static_cast<int>(s.lk);
  call->empty = s.b == 0 || s.lq == 0;
  call->scale = std::isnan(o.scale) ? default_scale(a.head_dim) : o.scale;
  return Status::success();
}

}  // namespace

// The checks run in this order, and the first that fails is the error.
Status validate_layer_call(const TensorView& x_q, const TensorView* x_kv, const LayerParameters& p,
                           const TensorView& out, const LayerOptions& options,
                           ValidatedLayerCall* call) {
  const bool self_attention = x_kv == nullptr;
  const char* x_name = self_attention ? "x" : "x_q";
  LayerSizes sizes;
  ATTNFORGE_CHECK(check_inputs(x_q, x_kv, x_name, &sizes));
  ATTNFORGE_CHECK(check_heads(options, x_name, &sizes));
  ATTNFORGE_CHECK(check_parameters(p, self_attention, sizes, x_name));
  ATTNFORGE_CHECK(check_out(out, sizes, x_name));
  ATTNFORGE_CHECK(check_attention_options(options, x_q, sizes, x_name));
  ATTNFORGE_CHECK(check_outputs_apart(x_q, x_kv, p, out, options.attention, x_name));
  return describe_call(p, options, self_attention, sizes, call);
}

}  // namespace attnforge::runtime
