#include "layer_form.h"

namespace attnforge {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;

// Rows past the sequence (a rounded-up tile) read the last row; they are never stored.
Expr clamp_row(const Expr& i, const Expr& len) {
  return Halide::clamp(i, 0, len - 1);
}

Projection project(const LayerSpec& spec, const Func& x, const Expr& len, const Func& w,
                   const Func& bias, int first_head, int heads, const AttentionVars& v,
                   const std::string& name) {
  const int D = spec.head_dim();
  Projection p;
  p.heads = heads;
  p.sum = Func(name + "_sum");
  p.out = Func(name);
  p.over_model = RDom(0, spec.d_model, "over_model");
  const Expr feature = (first_head + v.h) * D + v.d;
  p.sum(v.d, v.i, v.h, v.b) = 0.0f;
  p.sum(v.d, v.i, v.h, v.b) += x(p.over_model, clamp_row(v.i, len), v.b) * w(feature, p.over_model);
  if (bias.defined()) {
    p.out(v.d, v.i, v.h, v.b) = p.sum(v.d, v.i, v.h, v.b) + bias(feature);
  } else {
    p.out(v.d, v.i, v.h, v.b) = p.sum(v.d, v.i, v.h, v.b);
  }
  return p;
}

// A Func reading heads first_head.. of a projection, as the attention's (d, position, head, batch).
Func heads_of(const Projection& p, int first_head, const AttentionVars& v,
              const std::string& name) {
  Func f(name);
  f(v.d, v.i, v.h, v.b) = p.out(v.d, v.i, v.h + first_head, v.b);
  return f;
}

}  // namespace

LayerProjections build_projections(const LayerSpec& spec, const LayerInputs& in,
                                   const AttentionVars& v, bool separate_query) {
  const int H = spec.attention.heads, Hkv = spec.attention.kv_heads;
  LayerProjections out;
  out.attention = in.attention;
  out.attention.q_len = in.q_len;
  out.attention.kv_len = in.kv_len;
  if (spec.self_attention && !separate_query) {
    out.all = {project(spec, in.x_q, in.q_len, in.w_qkv, in.b_qkv, 0, H + 2 * Hkv, v, "qkv")};
    out.attention.q = heads_of(out.all[0], 0, v, "q");
    out.attention.k = heads_of(out.all[0], H, v, "k");
    out.attention.v = heads_of(out.all[0], H + Hkv, v, "v");
  } else if (spec.self_attention) {
    out.all = {project(spec, in.x_q, in.q_len, in.w_qkv, in.b_qkv, 0, H, v, "q_proj"),
               project(spec, in.x_q, in.kv_len, in.w_qkv, in.b_qkv, H, 2 * Hkv, v, "kv")};
    out.attention.q = heads_of(out.all[0], 0, v, "q");
    out.attention.k = heads_of(out.all[1], 0, v, "k");
    out.attention.v = heads_of(out.all[1], Hkv, v, "v");
  } else {
    out.all = {project(spec, in.x_q, in.q_len, in.w_q, in.b_q, 0, H, v, "q_proj"),
               project(spec, in.x_kv, in.kv_len, in.w_k, in.b_k, 0, Hkv, v, "k_proj"),
               project(spec, in.x_kv, in.kv_len, in.w_v, in.b_v, 0, Hkv, v, "v_proj")};
    out.attention.q = heads_of(out.all[0], 0, v, "q");
    out.attention.k = heads_of(out.all[1], 0, v, "k");
    out.attention.v = heads_of(out.all[2], 0, v, "v");
  }
  out.query = 0;
  return out;
}

OutputProjection build_output_projection(const LayerSpec& spec, const LayerInputs& in,
                                         const Func& attention, const AttentionVars& v) {
  const int D = spec.head_dim();
  OutputProjection o;
  o.heads = Func("heads");
  o.sum = Func("out_proj_sum");
  o.output = Func("out_proj");
  o.heads(v.d, v.i, v.h, v.b) = attention(v.d, v.i, v.h, v.b);
  o.over_features = RDom(0, D, 0, spec.attention.heads, "over_features");
  const Halide::RVar d = o.over_features.x, h = o.over_features.y;
  o.sum(o.m, v.i, v.b) = 0.0f;
  o.sum(o.m, v.i, v.b) += o.heads(d, clamp_row(v.i, in.q_len), h, v.b) * in.w_o(o.m, h * D + d);
  if (in.b_o.defined()) {
    o.output(o.m, v.i, v.b) = o.sum(o.m, v.i, v.b) + in.b_o(o.m);
  } else {
    o.output(o.m, v.i, v.b) = o.sum(o.m, v.i, v.b);
  }
  return o;
}

Func average_over_heads(const LayerSpec& spec, const Func& weights, const AttentionVars& v) {
  Func average("average_weights");
  RDom over_heads(0, spec.attention.heads, "over_heads");
  average(v.j, v.i, v.b) =
      Halide::sum(weights(v.j, v.i, over_heads, v.b)) / static_cast<float>(spec.attention.heads);
  return average;
}

}  // namespace attnforge
