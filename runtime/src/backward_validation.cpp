#include "backward_validation.h"

#include <fmt/format.h>

#include "tensor_checks.h"

namespace attnforge::runtime {

namespace {

// The forward options a backward call cannot take, and why.
Status check_backward_options(const AttentionOptions& o) {
  struct Refused {
    bool given;
    const char* name;
    const char* why;
  };
  const Refused refused[] = {
      {o.weights != nullptr, "weights", "the backward pass writes no attention weights"},
      {o.lse != nullptr, "lse", "pass the forward's lse as the lse argument"},
      {o.page_table != nullptr, "page_table", "paged caches are for decoding"},
      {o.cu_seqlens_q || o.cu_seqlens_k, "cu_seqlens_q, cu_seqlens_k",
       "packed batches have no backward kernels yet"},
      {o.k_scale || o.v_scale, "k_scale, v_scale", "8-bit caches are for decoding"},
      {!o.modifier.empty(), "modifier", "modifiers have no gradient rule yet"},
  };
  for (const Refused& r : refused) {
    if (r.given)
      return invalid(fmt::format("{}: not taken by attention_backward; {}", r.name, r.why));
  }
  return Status::success();
}

}  // namespace

Status validate_backward_call(const BackwardTensors& t, const AttentionOptions& options,
                              ValidatedCall* call) {
  ATTNFORGE_CHECK(check_backward_options(options));
  ATTNFORGE_CHECK(validate_call(t.q, t.k, t.v, t.out, options, call));
  const int64_t b = t.q.shape[0], h = t.q.shape[1], lq = t.q.shape[2], d = t.q.shape[3];
  const int64_t h_kv = t.k.shape[1], lk = t.k.shape[2];
  struct Like {
    const TensorView& tensor;
    const char* name;
    int64_t shape[4];
    const char* text;
  };
  const Like gradients[] = {{t.d_out, "d_out", {b, h, lq, d}, "[B, H, Lq, D] (as out)"},
                            {t.dq, "dq", {b, h, lq, d}, "[B, H, Lq, D] (as q)"},
                            {t.dk, "dk", {b, h_kv, lk, d}, "[B, H_kv, Lk, D] (as k)"},
                            {t.dv, "dv", {b, h_kv, lk, d}, "[B, H_kv, Lk, D] (as v)"}};
  for (const Like& g : gradients) {
    ATTNFORGE_CHECK(check_layout(g.tensor, g.name, 4, g.text));
    ATTNFORGE_CHECK(check_type(g.tensor, g.name, t.q.type));
    ATTNFORGE_CHECK(check_device(g.tensor, g.name, t.q.device));
    ATTNFORGE_CHECK(check_shape(g.tensor, g.name, g.shape, g.text));
  }
  ATTNFORGE_CHECK(check_layout(t.lse, "lse", 3, "[B, H, Lq]"));
  ATTNFORGE_CHECK(check_type(t.lse, "lse", ElementType::f32));
  ATTNFORGE_CHECK(check_device(t.lse, "lse", t.q.device));
  ATTNFORGE_CHECK(check_extents(t.lse, "lse", {b, h, lq}, "[B, H, Lq] (the forward's lse)"));
  // Each gradient apart from what the call reads and from the gradients before it.
  const NamedView read[] = {{&t.q, "q"},
                            {&t.k, "k"},
                            {&t.v, "v"},
                            {&t.out, "out"},
                            {&t.d_out, "d_out"},
                            {&t.lse, "lse"},
                            {options.key_lengths, "key_lengths"},
                            {options.bias, "bias"},
                            {options.alibi_slopes, "alibi_slopes"},
                            {&t.dq, "dq"},
                            {&t.dk, "dk"},
                            {&t.dv, "dv"}};
  constexpr size_t kInputs = 9;
  ATTNFORGE_CHECK(check_written(t.dq, "dq", read, kInputs));
  ATTNFORGE_CHECK(check_written(t.dk, "dk", read, kInputs + 1));
  ATTNFORGE_CHECK(check_written(t.dv, "dv", read, kInputs + 2));
  if (t.d_bias) {
    // Every (b, h) entry's gradient: a bias broadcast over B or H sums it there.
    const char* text = "[B, H, Lq, Lk] (every entry of the bias, broadcast or not)";
    if (!options.bias) return invalid("d_bias: the gradient of a bias; the call passes none");
    const int64_t shape[4] = {b, h, lq, lk};
    ATTNFORGE_CHECK(check_layout(*t.d_bias, "d_bias", 4, text));
    ATTNFORGE_CHECK(check_type(*t.d_bias, "d_bias", t.q.type));
    ATTNFORGE_CHECK(check_device(*t.d_bias, "d_bias", t.q.device));
    ATTNFORGE_CHECK(check_shape(*t.d_bias, "d_bias", shape, text));
    ATTNFORGE_CHECK(check_written(*t.d_bias, "d_bias", read, kInputs + 3));
    call->spec.bias_grad = true;
  }
  return Status::success();
}

}  // namespace attnforge::runtime
