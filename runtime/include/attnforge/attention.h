// Scaled dot-product attention over many heads with the emitted kernels:
//   out = softmax(q k^T * scale + bias + mask) v
// q: [B, H, Lq, D]; k, v: [B, H_kv, Lk, D] with H a multiple of H_kv (GQA/MQA);
// out: [B, H, Lq, D]. Strides are free except the innermost (D), which must be
// 1, so [B, L, H, D] memory is a view with swapped strides. out and weights
// need memory of their own: no element shared, no byte shared with an input.
// All of q, k, v, out (and bias, weights) share one element type: f32, f16 or
// bf16; or k and v are an 8-bit cache (i8, with k_scale and v_scale; kv_cache.h writes one).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "status.h"
#include "tensor.h"

namespace attnforge {

// Which keys a query sees by position. Everything here says which keys are
// KEPT; there is no boolean mask tensor whose polarity a caller could guess.
enum class MaskKind {
  none,            // every key
  causal,          // keys at or before the query's aligned position
  sliding_window,  // keys within [p - window_left, p + window_right] of aligned position p
};

// Where query i sits among the keys when Lq != Lk: top_left at key i (PyTorch's
// is_causal); bottom_right at key i + Lk - Lq (decoding with a KV cache).
enum class MaskAlignment { top_left, bottom_right };

// One of a modifier's tensors, by the name the modifier declares.
struct ModifierTensorView {
  std::string name;
  const TensorView* tensor = nullptr;
};

namespace runtime {
struct ModifierKeyRangeAccess;
}

// The key ranges of a modifier's mask rule (docs/modifiers.md), kept across
// calls (FlexAttention's create_block_mask): a call given one reuses the
// ranges it holds when the modifier, the shape and its tensors' values are
// those they were computed for, and computes them again otherwise. One per
// thread: calls that share one must not run at once.
class ModifierKeyRangeCache {
 public:
  // Calls that computed the ranges, and calls that reused them.
  int computed() const { return computed_; }
  int reused() const { return reused_; }

 private:
  friend struct runtime::ModifierKeyRangeAccess;
  std::string key_;  // what the ranges were computed for
  std::vector<int32_t> ranges_;
  int computed_ = 0, reused_ = 0;
};

struct AttentionOptions {
  MaskKind mask = MaskKind::none;
  MaskAlignment alignment = MaskAlignment::top_left;
  // sliding_window only: the window's sizes. A kernel compiled for this
  // window runs if the package has one, else a kernel taking the window per
  // call (spec mask `window`).
  int window_left = 0;
  int window_right = 0;

  // Key padding: int32 [B]; batch b KEEPS keys 0 .. key_lengths[b] - 1 and
  // masks the rest; a row with no key is zeros. 0 <= key_lengths[b] <= Lk:
  // on the CPU another value is an error; CUDA lengths stay on the device,
  // unchecked, and one out of range gives an unspecified result (reads stay
  // in bounds).
  const TensorView* key_lengths = nullptr;

  // A paged KV cache (vLLM's and FlashAttention's block table): int32
  // [B, max_pages]. k and v are then [num_pages, H_kv, page_size, D] (so
  // FlashAttention's [num_pages, page_size, H_kv, D] memory is a view with
  // swapped strides), and key j of sequence b is position j % page_size of
  // page page_table[b][j / page_size]. Needs key_lengths, each at most
  // max_pages * page_size; the entries of the pages a sequence's length
  // covers must be in 0..num_pages - 1 and later ones are never read. CPU only.
  const TensorView* page_table = nullptr;

  // Packed variable-length batches (FlashAttention's cu_seqlens): int32
  // [S + 1] cumulative offsets in CPU memory, for the queries and for the
  // keys, both or neither. The S sequences lie one after another along L of q,
  // k, v and out, whose B is then 1 (FlashAttention's [total, H, D] memory is
  // a [1, H, total, D] view): sequence s is queries cu_seqlens_q[s] ..
  // cu_seqlens_q[s + 1] - 1 over keys cu_seqlens_k[s] .. cu_seqlens_k[s + 1] - 1,
  // masked and aligned on its own (bottom_right: its last query at its last
  // key). Offsets start at 0, never decrease and end at the total length; a
  // sequence with queries needs a key. Not with key_lengths, page_table, bias
  // or weights. Each sequence runs the kernel for its own shape on views of
  // the packed memory; where each of its keys is read 256 times or more
  // (queries x query heads per KV head), on dense copies of its K and V rows,
  // made for the call in CPU memory (docs/runtime.md, "Packed batches").
  const TensorView* cu_seqlens_q = nullptr;
  const TensorView* cu_seqlens_k = nullptr;

  // An 8-bit KV cache (kv_cache.h), both or neither; CPU only; not with cu_seqlens.
  // - k and v i8 (kv8): each row has an f32 scale, so key j's K row is
  //   k[b, h, j, :] * k_scale[b, h, j] (and V's likewise). [B, H_kv, Lk], or
  //   [num_pages, H_kv, page_size] with a page table: one per row of k and v.
  // - k and v f8e4m3 (kvfp8): e4m3 codes and an f32 scale per KV head, [H_kv],
  //   so key j's K row is e4m3(k[b, h, j, :]) * k_scale[h].
  // write_quantized_rows (kv_cache.h) fills them.
  const TensorView* k_scale = nullptr;
  const TensorView* v_scale = nullptr;

  // Additive bias on the logits, [B or 1, H or 1, Lq, Lk], the call's element
  // type; a size-1 dimension broadcasts. -inf masks that position.
  const TensorView* bias = nullptr;

  // ALiBi: f32 [H]; adds -slope[h] * |j - aligned(i)|. Not with `bias`.
  const TensorView* alibi_slopes = nullptr;

  float scale = NAN;  // NaN: 1 / sqrt(D)

  // Logit softcapping (Gemma 2, Grok; FlashAttention's softcap): the scaled
  // logit s becomes tanh(s / softcap) * softcap, before bias, ALiBi and mask.
  // 0: none. Compiled into a kernel: it must equal an emitted kernel's cap.
  float softcap = 0.0f;

  // Also write the normalized attention weights, [B, H, Lq, Lk].
  TensorView* weights = nullptr;

  // Also write each row's log-sum-exp, f32 [B, H, Lq]: the log of the sum of
  // exp(logit) over the keys the row sees, +inf for a row that sees none. The
  // backward pass reads it. CPU only; not with cu_seqlens.
  TensorView* lse = nullptr;

  // A modifier: a user's score and mask rule compiled into the package's
  // kernels (docs/modifiers.md; `attnforge emit --mod name=FILE`). Its
  // kernels run, and every tensor it declares is given here by name, of the
  // type and shape it declares with its dimensions outermost first: a
  // modifier's {queries, batch} tensor is [B, Lq]. CPU only; not with cu_seqlens.
  std::string modifier;
  std::vector<ModifierTensorView> modifier_tensors;
  // A mask rule's key ranges kept across calls; null: computed in every call.
  ModifierKeyRangeCache* key_range_cache = nullptr;
};

// Validates every argument, picks the best emitted kernel and runs it. On any
// error nothing is written to out or weights.
Status attention(const TensorView& q, const TensorView& k, const TensorView& v,
                 const TensorView& out, const AttentionOptions& options = {});

// The gradients of attention(q, k, v, out, options) for a loss whose gradient
// by out is d_out: writes dq (as q), dk and dv (as k and v; each KV head's
// summed over its query heads). lse is the forward call's
// AttentionOptions::lse, f32 [B, H, Lq]; out is its output. options are the
// forward call's: mask, alignment, window, key_lengths, bias, alibi_slopes,
// scale and softcap; weights, lse, page_table, cu_seqlens, 8-bit caches and
// modifiers are refused. A row that sees no key has zero gradients. The
// tensors are all on the CPU or all on the CUDA device; the package needs the
// spec's backward kernel for that device (`attnforge emit --backward`). With
// d_bias (a call with a bias), also writes the bias's gradient, [B, H, Lq,
// Lk] in the call's element type, 0 where the mask hides a key: every
// entry's, so a bias broadcast over B or H takes its sum there; the package
// needs the spec's .dbias backward kernel. On any error nothing is written to
// dq, dk, dv or d_bias.
Status attention_backward(const TensorView& q, const TensorView& k, const TensorView& v,
                          const TensorView& out, const TensorView& d_out, const TensorView& lse,
                          const TensorView& dq, const TensorView& dk, const TensorView& dv,
                          const AttentionOptions& options = {}, const TensorView* d_bias = nullptr);

// The kernel attention() would run for these arguments (after the same
// validation), for logs and tests.
struct KernelChoice {
  std::string function;  // the emitted kernel's entry point
  std::string spec;      // its spec, e.g. causal.gqa8x2.d64.f32 or self.dm512.causal.mha8.d64.f32
  std::string target;    // the Halide target it was compiled for
  std::string bucket;    // the shape bucket it was tuned for (b1.q2048.k2048), "generic",
                         // "generic.q16" (the generic kernel for up to 16 query rows),
                         // "generic.q1" (one row) or "backward" (attention_backward's)
};
Status choose_kernel(const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& out, const AttentionOptions& options, KernelChoice* choice);

// Every kernel in the linked package, the MHA layer's (spec self.* or cross.*) too.
std::vector<KernelChoice> available_kernels();

// Worker threads of CPU kernels (0: one per core). Applies to later calls.
void set_num_threads(int threads);

}  // namespace attnforge
