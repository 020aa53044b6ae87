#include "call_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <utility>

#include "element_types.h"
#include "tensor_checks.h"

namespace attnforge::runtime {

namespace {

// A paged cache's table: [B, max_pages] int32 on the CPU, with key lengths
// (checked first), and a page of k for every entry a sequence's length covers.
Status check_page_table(const AttentionOptions& o, const ValidatedCall& call, int64_t pages,
                        int64_t page_size) {
  const TensorView& table = *o.page_table;
  if (!o.key_lengths) {
    return invalid("page_table: a paged cache needs key_lengths, each sequence's cache length");
  }
  if (table.device != Device::cpu) {
    return invalid("page_table: paged caches have CPU kernels only; the table is on cuda");
  }
  const auto* entries = static_cast<const int32_t*>(table.data);
  const auto* lengths = static_cast<const int32_t*>(o.key_lengths->data);
  for (int64_t b = 0; b < call.batch; ++b) {
    const int64_t used = (lengths[b * o.key_lengths->strides[0]] + page_size - 1) / page_size;
    for (int64_t n = 0; n < used; ++n) {
      const int32_t page = entries[b * table.strides[0] + n * table.strides[1]];
      if (page < 0 || page >= pages) {
        return invalid(fmt::format(
            "page_table: [{}, {}] is {}; expected a page of k and v, 0..{} (num_pages - 1), "
            "for the {} keys of sequence {}",
            b, n, page, pages - 1, lengths[b * o.key_lengths->strides[0]], b));
      }
    }
  }
  return Status::success();
}

// An 8-bit cache's scales (see AttentionOptions::k_scale): both or neither,
// given exactly when k and v are i8 or f8e4m3, f32, in CPU memory; one per
// row of k (i8) or per KV head (f8e4m3).
Status check_kv_scales(const AttentionOptions& o, const TensorView& k, bool paged) {
  const bool quantized = is_cache_type(k.type);
  if (!o.k_scale != !o.v_scale) {
    return invalid(fmt::format("{}: null, but {} is given; an 8-bit cache needs both",
                               o.k_scale ? "v_scale" : "k_scale",
                               o.k_scale ? "k_scale" : "v_scale"));
  }
  if (quantized && !o.k_scale) {
    return invalid(fmt::format("k_scale, v_scale: k is {} (an 8-bit cache); give its f32 scales",
                               to_string(k.type)));
  }
  if (!quantized && o.k_scale) {
    return invalid(
        fmt::format("k_scale: given, but k is {}; an 8-bit cache's k and v are i8 or f8e4m3",
                    to_string(k.type)));
  }
  if (!quantized) return Status::success();
  if (o.cu_seqlens_q || o.cu_seqlens_k) {
    return invalid("k_scale: an 8-bit cache is not taken with cu_seqlens (a packed batch)");
  }
  const bool e4m3 = k.type == ElementType::f8e4m3;
  const char* expected = e4m3    ? "[H_kv] (one per KV head of k)"
                         : paged ? "[num_pages, H_kv, page_size] (k's first three)"
                                 : "[B, H_kv, Lk] (k's first three)";
  for (const auto& [scales, name] : {std::pair{o.k_scale, "k_scale"}, {o.v_scale, "v_scale"}}) {
    ATTNFORGE_CHECK(check_layout(*scales, name, e4m3 ? 1 : 3, expected));
    ATTNFORGE_CHECK(check_type(*scales, name, ElementType::f32));
    if (scales->device != Device::cpu || k.device != Device::cpu) {
      return invalid(fmt::format("{}: 8-bit caches have CPU kernels only; k is on {}, {} on {}",
                                 name, to_string(k.device), name, to_string(scales->device)));
    }
    if (e4m3) {
      ATTNFORGE_CHECK(check_extents(*scales, name, {k.shape[1]}, expected));
    } else {
      ATTNFORGE_CHECK(check_extents(*scales, name, {k.shape[0], k.shape[1], k.shape[2]}, expected));
    }
  }
  return Status::success();
}

// See ValidatedCall::row_alignment. Strides are [B, H, L, D], outermost first.
int row_alignment(std::initializer_list<const TensorView*> tensors) {
  constexpr uint64_t kMost = 256;
  uint64_t offsets = kMost;
  for (const TensorView* t : tensors) {
    offsets |= reinterpret_cast<uintptr_t>(t->data);
    for (int dim = 0; dim < 3; ++dim) {
      offsets |= static_cast<uint64_t>(t->strides[dim] * element_bytes(t->type));
    }
  }
  return static_cast<int>(offsets & (~offsets + 1));  // the lowest bit set
}

// A packed batch's offsets (see AttentionOptions::cu_seqlens_q): both, in
// CPU memory, [S + 1] int32 from 0 to the total length, never decreasing,
// a key for every sequence with queries, and none of the per-batch options.
Status check_packed(const AttentionOptions& o, int64_t b, int64_t lq, int64_t lk) {
  if (!o.cu_seqlens_q || !o.cu_seqlens_k) {
    return invalid(fmt::format("{}: null, but {} is given; a packed batch needs both",
                               o.cu_seqlens_q ? "cu_seqlens_k" : "cu_seqlens_q",
                               o.cu_seqlens_q ? "cu_seqlens_q" : "cu_seqlens_k"));
  }
  const NamedView per_batch[] = {{o.key_lengths, "key_lengths"},
                                 {o.page_table, "page_table"},
                                 {o.bias, "bias"},
                                 {o.weights, "weights"},
                                 {o.lse, "lse"}};
  for (const NamedView& n : per_batch) {
    if (n.view) {
      return invalid(
          fmt::format("{}: not with cu_seqlens_q and cu_seqlens_k (a packed batch)", n.name));
    }
  }
  if (b != 1) {
    return invalid(fmt::format(
        "q: a packed batch lies along L, [1, H, total_q, D]; got B = {} with cu_seqlens_q", b));
  }
  const TensorView* offsets[2] = {o.cu_seqlens_q, o.cu_seqlens_k};
  const char* names[2] = {"cu_seqlens_q", "cu_seqlens_k"};
  const int64_t totals[2] = {lq, lk};
  const char* total_names[2] = {"total_q, Lq of q", "total_k, Lk of k"};
  for (int n = 0; n < 2; ++n) {
    const TensorView& t = *offsets[n];
    ATTNFORGE_CHECK(check_layout(t, names[n], 1, "[S + 1]"));
    ATTNFORGE_CHECK(check_type(t, names[n], ElementType::i32));
    if (t.device != Device::cpu) {
      return invalid(
          fmt::format("{}: on {}; the runtime reads the offsets, which must be in "
                      "CPU memory",
                      names[n], to_string(t.device)));
    }
    if (t.shape[0] < 2 || t.shape[0] != offsets[0]->shape[0]) {
      return invalid(fmt::format("{}: expected shape [S + 1] with S >= 1{}, got {}", names[n],
                                 n ? " (as cu_seqlens_q)" : "", shape_text(t)));
    }
    const auto* values = static_cast<const int32_t*>(t.data);
    const int64_t last = t.shape[0] - 1;
    if (values[0] != 0)
      return invalid(fmt::format("{}: [0] is {}; expected 0", names[n], values[0]));
    for (int64_t s = 1; s <= last; ++s) {
      const int32_t at = values[s * t.strides[0]], before = values[(s - 1) * t.strides[0]];
      if (at < before) {
        return invalid(fmt::format("{}: [{}] is {}, below [{}] = {}; offsets never decrease",
                                   names[n], s, at, s - 1, before));
      }
    }
    if (values[last * t.strides[0]] != totals[n]) {
      return invalid(fmt::format("{}: [{}] is {}; expected {} ({})", names[n], last,
                                 values[last * t.strides[0]], total_names[n], totals[n]));
    }
  }
  const auto* q_at = static_cast<const int32_t*>(o.cu_seqlens_q->data);
  const auto* k_at = static_cast<const int32_t*>(o.cu_seqlens_k->data);
  const int64_t qs = o.cu_seqlens_q->strides[0], ks = o.cu_seqlens_k->strides[0];
  for (int64_t s = 0; s + 1 < o.cu_seqlens_q->shape[0]; ++s) {
    if (q_at[(s + 1) * qs] > q_at[s * qs] && k_at[(s + 1) * ks] == k_at[s * ks]) {
      return invalid(fmt::format("cu_seqlens_k: sequence {} has {} queries but no key", s,
                                 q_at[(s + 1) * qs] - q_at[s * qs]));
    }
  }
  return Status::success();
}

}  // namespace

Status check_options(const AttentionOptions& o, const TensorView& q, int64_t b, int64_t lq,
                     int64_t lk, int64_t heads) {
  if (o.mask == MaskKind::sliding_window ? (o.window_left < 0 || o.window_right < 0)
                                         : (o.window_left != 0 || o.window_right != 0)) {
    return invalid(fmt::format(
        "window_left, window_right: ({}, {}); expected sizes >= 0 with a sliding_window mask "
        "and 0 otherwise",
        o.window_left, o.window_right));
  }
  if (!std::isnan(o.scale) && !std::isfinite(o.scale)) {
    return invalid(
        fmt::format("scale: expected a finite number or NaN (1/sqrt(D)), got {}", o.scale));
  }
  if (!(o.softcap == 0.0f || (o.softcap >= kMinSoftcap && o.softcap <= kMaxSoftcap))) {
    return invalid(fmt::format("softcap: expected 0 (none) or {}..{}, got {}", kMinSoftcap,
                               kMaxSoftcap, o.softcap));
  }
  if (o.bias && o.alibi_slopes) return invalid("bias, alibi_slopes: give one or the other");
  if (const TensorView* lengths = o.key_lengths) {
    ATTNFORGE_CHECK(check_layout(*lengths, "key_lengths", 1, "[B]"));
    ATTNFORGE_CHECK(check_type(*lengths, "key_lengths", ElementType::i32));
    ATTNFORGE_CHECK(check_device(*lengths, "key_lengths", q.device));
    if (lengths->shape[0] != b) {
      return invalid(
          fmt::format("key_lengths: expected shape [B] = [{}], got {}", b, shape_text(*lengths)));
    }
    if (lengths->device == Device::cpu) {
      const auto* values = static_cast<const int32_t*>(lengths->data);
      for (int64_t n = 0; n < b; ++n) {
        int32_t length = values[n * lengths->strides[0]];
        if (length < 0 || length > lk) {
          return invalid(
              o.page_table
                  ? fmt::format("key_lengths: [{}] is {}; the page table holds "
                                "max_pages x page_size = {} positions per sequence",
                                n, length, lk)
                  : fmt::format("key_lengths: [{}] is {}; expected 0..Lk ({})", n, length, lk));
        }
      }
    }
  }
  if (const TensorView* bias = o.bias) {
    ATTNFORGE_CHECK(check_layout(*bias, "bias", 4, "[B or 1, H or 1, Lq, Lk]"));
    ATTNFORGE_CHECK(check_type(*bias, "bias", q.type));
    ATTNFORGE_CHECK(check_device(*bias, "bias", q.device));
    ATTNFORGE_CHECK(check_shape(*bias, "bias", {b, heads, lq, lk}, "[B or 1, H or 1, Lq, Lk]",
                                {true, true, false, false}));
  }
  if (const TensorView* slopes = o.alibi_slopes) {
    ATTNFORGE_CHECK(check_layout(*slopes, "alibi_slopes", 1, "[H]"));
    ATTNFORGE_CHECK(check_type(*slopes, "alibi_slopes", ElementType::f32));
    ATTNFORGE_CHECK(check_device(*slopes, "alibi_slopes", q.device));
    if (slopes->shape[0] != heads) {
      return invalid(fmt::format("alibi_slopes: expected shape [H] = [{}], got {}", heads,
                                 shape_text(*slopes)));
    }
  }
  if (const TensorView* weights = o.weights) {
    ATTNFORGE_CHECK(check_layout(*weights, "weights", 4, "[B, H, Lq, Lk]"));
    ATTNFORGE_CHECK(check_type(*weights, "weights", q.type));
    ATTNFORGE_CHECK(check_device(*weights, "weights", q.device));
    ATTNFORGE_CHECK(check_shape(*weights, "weights", {b, heads, lq, lk}, "[B, H, Lq, Lk]"));
  }
  if (const TensorView* lse = o.lse) {
    ATTNFORGE_CHECK(check_layout(*lse, "lse", 3, "[B, H, Lq]"));
    ATTNFORGE_CHECK(check_type(*lse, "lse", ElementType::f32));
    ATTNFORGE_CHECK(check_device(*lse, "lse", q.device));
    ATTNFORGE_CHECK(check_extents(*lse, "lse", {b, heads, lq}, "[B, H, Lq]"));
  }
  return Status::success();
}

void apply_options(const AttentionOptions& options, AttentionSpec& spec) {
  spec.mask = options.mask == MaskKind::causal           ? PositionMask::causal
              : options.mask == MaskKind::sliding_window ? PositionMask::window
                                                         : PositionMask::none;
  spec.window_left = options.window_left;
  spec.window_right = options.window_right;
  spec.softcap = options.softcap;
  spec.key_padding = options.key_lengths != nullptr;
  spec.bias = options.bias           ? BiasKind::tensor
              : options.alibi_slopes ? BiasKind::alibi
                                     : BiasKind::none;
  spec.alignment = spec.positional() && options.alignment == MaskAlignment::bottom_right
                       ? Alignment::bottom_right
                       : Alignment::top_left;
  spec.return_weights = options.weights != nullptr;
  spec.return_lse = options.lse != nullptr;
}

Status validate_call(const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& out, const AttentionOptions& options, ValidatedCall* call) {
  ATTNFORGE_CHECK(check_layout(q, "q", 4, "[B, H, Lq, D]"));
  if (!runtime::is_storage_type(q.type)) {
    return invalid(
        fmt::format("q: expected element type f32, f16 or bf16, got {}", to_string(q.type)));
  }
  const TensorView* table = options.page_table;
  const char* kv_shape = table ? "[num_pages, H_kv, page_size, D]" : "[B, H_kv, Lk, D]";
  ATTNFORGE_CHECK(check_layout(k, "k", 4, kv_shape));
  ATTNFORGE_CHECK(check_layout(v, "v", 4, kv_shape));
  ATTNFORGE_CHECK(check_layout(out, "out", 4, "[B, H, Lq, D]"));
  const int64_t b = q.shape[0], h = q.shape[1], lq = q.shape[2], d = q.shape[3];
  const int64_t h_kv = k.shape[1];
  int64_t lk = k.shape[2];
  if (table) {
    const int64_t pages = k.shape[0], page_size = k.shape[2];
    ATTNFORGE_CHECK(check_shape(k, "k", {pages, h_kv, page_size, d}, kv_shape));
    ATTNFORGE_CHECK(
        check_shape(v, "v", {pages, h_kv, page_size, d}, "[num_pages, H_kv, page_size, D] (as k)"));
    ATTNFORGE_CHECK(check_layout(*table, "page_table", 2, "[B, max_pages]"));
    ATTNFORGE_CHECK(check_type(*table, "page_table", ElementType::i32));
    if (table->shape[0] != b || table->shape[1] < 1) {
      return invalid(fmt::format("page_table: expected shape [B, max_pages] = [{}, >= 1], got {}",
                                 b, shape_text(*table)));
    }
    if (pages < 1 || page_size < 1) {
      return invalid(fmt::format("k: a paged cache needs pages of at least one position, got {}",
                                 shape_text(k)));
    }
    lk = table->shape[1] * page_size;
  } else {
    ATTNFORGE_CHECK(check_shape(k, "k", {b, h_kv, lk, d}, kv_shape));
    ATTNFORGE_CHECK(check_shape(v, "v", {b, h_kv, lk, d}, "[B, H_kv, Lk, D] (as k)"));
  }
  ATTNFORGE_CHECK(check_shape(out, "out", {b, h, lq, d}, "[B, H, Lq, D] (as q)"));
  const bool quantized_cache = is_cache_type(k.type);
  const ElementType cache_type = quantized_cache ? k.type : q.type;
  for (const auto& [tensor, name] : {std::pair{&k, "k"}, {&v, "v"}, {&out, "out"}}) {
    ATTNFORGE_CHECK(check_type(*tensor, name, tensor == &out ? q.type : cache_type));
    ATTNFORGE_CHECK(check_device(*tensor, name, q.device));
  }
  if (h < 1 || d < 1)
    return invalid(fmt::format("q: H and D must be at least 1, got {}", shape_text(q)));
  if (h_kv < 1 || h % h_kv != 0) {
    return invalid(fmt::format("k: H_kv = {} must divide H = {} (MHA, GQA or MQA)", h_kv, h));
  }
  if (lk < 1) return invalid("k: Lk is 0; attention needs at least one key");

  call->batch = static_cast<int>(b);
  call->q_len = static_cast<int>(lq);
  call->kv_len = static_cast<int>(lk);
  call->device = q.device;
  call->empty = b == 0 || lq == 0;
  call->row_alignment = row_alignment({&q, &k, &v});
  ATTNFORGE_CHECK(check_options(options, q, b, lq, lk, h));
  const bool packed = options.cu_seqlens_q || options.cu_seqlens_k;
  if (packed) ATTNFORGE_CHECK(check_packed(options, b, lq, lk));
  if (table) ATTNFORGE_CHECK(check_page_table(options, *call, k.shape[0], k.shape[2]));
  ATTNFORGE_CHECK(check_kv_scales(options, k, table != nullptr));
  const AttentionOptions& o = options;
  const NamedView inputs[] = {{&q, "q"},
                              {&k, "k"},
                              {&v, "v"},
                              {o.k_scale, "k_scale"},
                              {o.v_scale, "v_scale"},
                              {o.key_lengths, "key_lengths"},
                              {o.page_table, "page_table"},
                              {o.bias, "bias"},
                              {o.alibi_slopes, "alibi_slopes"}};
  ATTNFORGE_CHECK(check_outputs(out, o.weights, inputs, o.lse));

  AttentionSpec& spec = call->spec;
  apply_options(options, spec);
  call->modifier = options.modifier;
  spec.page_size = table ? static_cast<int>(std::min<int64_t>(k.shape[2], 1 << 20)) : 0;
  spec.heads = static_cast<int>(std::min<int64_t>(h, 1 << 20));
  spec.kv_heads = static_cast<int>(std::min<int64_t>(h_kv, 1 << 20));
  spec.head_dim = static_cast<int>(std::min<int64_t>(d, 1 << 20));
  spec.dtype = storage_type(q.type);
  spec.kv_storage = k.type == ElementType::i8       ? KvStorage::int8
                    : k.type == ElementType::f8e4m3 ? KvStorage::fp8_e4m3
                                                    : KvStorage::dtype;
  try {
    spec.validate();
  } catch (const SpecError& error) {
    return invalid(error.what());
  }
  call->scale = std::isnan(options.scale) ? default_scale(spec.head_dim) : options.scale;
  return Status::success();
}

}  // namespace attnforge::runtime
