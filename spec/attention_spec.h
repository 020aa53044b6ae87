// AttentionSpec: what one attention kernel computes. Sequence lengths, batch and
// scale are run-time values; everything here is fixed when a kernel is compiled.
#pragma once

#include <string>
#include <string_view>

#include "field_error.h"

namespace attnforge {

// Which keys a query may see, by position.
enum class PositionMask { none, causal, window };

// Where the diagonal of a causal or window mask (and the ALiBi distance) sits
// when Lq != Lk: top_left puts query i at key i (PyTorch's is_causal);
// bottom_right puts query i at key i + Lk - Lq (the KV-cache convention).
enum class Alignment { top_left, bottom_right };

// An additive term on the logits: a user tensor broadcastable as
// [B or 1, H or 1, Lq, Lk], or ALiBi's -slope[h] * |j - aligned(i)|.
enum class BiasKind { none, tensor, alibi };

// Storage type of q, k, v, bias, out and weights; arithmetic is always f32.
enum class DType { f32, f16, bf16 };

// How the KV cache stores K and V (kv_quantization.h): in the spec's dtype;
// as int8 with an f32 scale per (position, KV head), value = int8 * scale
// (kv8); or as fp8 e4m3 with an f32 scale per KV head, value = e4m3 * scale (kvfp8).
enum class KvStorage { dtype, int8, fp8_e4m3 };

// The softcaps a spec may have, besides 0 (none).
constexpr float kMinSoftcap = 1e-3f;
constexpr float kMaxSoftcap = 1e6f;

// Thrown for a spec that cannot be built; field() names the offending field.
class SpecError : public FieldError {
 public:
  SpecError(std::string field, const std::string& message)
      : FieldError("attention spec", std::move(field), message) {}
};

struct AttentionSpec {
  PositionMask mask = PositionMask::none;
  Alignment alignment = Alignment::top_left;
  // Window only: query at aligned position p sees keys p - window_left .. p + window_right.
  int window_left = 0;
  int window_right = 0;
  // Window only: the sizes are arguments of each call, not compiled in (the
  // fields above are then 0). One kernel serves every window.
  bool run_time_window = false;
  // Per-batch valid key lengths: keys j >= key_lengths[b] are masked.
  bool key_padding = false;
  // A paged KV cache: K and V are pages of page_size positions, (d, position
  // in page, kv head, page), and a page table [B, max_pages] int32 names each
  // sequence's pages in order (vLLM's and FlashAttention's block_table). Its
  // lengths are per sequence, so it needs key padding. 0: one contiguous
  // (d, position, kv head, batch) cache.
  int page_size = 0;
  BiasKind bias = BiasKind::none;
  // Logit softcapping (Gemma 2, Grok): a scaled logit s becomes
  // tanh(s / softcap) * softcap before the bias and the mask. 0: none.
  float softcap = 0.0f;
  // A user's score and mask rule (algorithm/modifier.h), by its name and the
  // hash of its source (modifier_hash_of), so a changed rule is another spec
  // and never runs a stale kernel. Empty: none.
  std::string modifier;
  std::string modifier_hash;
  int heads = 1;
  int kv_heads = 1;
  int head_dim = 64;
  DType dtype = DType::f32;
  KvStorage kv_storage = KvStorage::dtype;
  // Also write the normalized attention weights [B, H, Lq, Lk].
  bool return_weights = false;
  // Also write each row's log-sum-exp [B, H, Lq] in f32: log of the sum of
  // exp(logit) over the keys it sees, +inf for a row that sees none. The
  // backward pass reads it (spec/backward_arguments.h).
  bool return_lse = false;
  // A backward kernel that also writes the bias tensor's gradient dBias
  // [B, H, Lq, Lk] (spec/backward_arguments.h); a bias tensor's specs only.
  bool bias_grad = false;

  // Throws SpecError naming the first invalid field.
  void validate() const;

  int group_size() const { return heads / kv_heads; }
  bool paged() const { return page_size > 0; }
  bool quantized_kv() const { return kv_storage != KvStorage::dtype; }
  bool softcapped() const { return softcap > 0.0f; }
  bool modified() const { return !modifier.empty(); }
  // Whether query and key positions enter the scores (a causal or window
  // mask, or ALiBi): only then can alignment be bottom_right.
  bool positional() const { return mask != PositionMask::none || bias == BiasKind::alibi; }

  // Canonical string, e.g. "causal.gqa32x8.d128.f16"; parse(to_string()) == *this.
  std::string to_string() const;

  // Parses the canonical form only (one string per spec); throws SpecError.
  static AttentionSpec parse(std::string_view text);

  bool operator==(const AttentionSpec& other) const;
  bool operator!=(const AttentionSpec& other) const { return !(*this == other); }
};

std::string_view to_string(PositionMask mask);
std::string_view to_string(Alignment alignment);
std::string_view to_string(BiasKind bias);
std::string_view to_string(DType dtype);
std::string_view to_string(KvStorage storage);

// What a spec whose window is given per call computes with these sizes: the
// same spec with the window compiled in (any other spec unchanged).
AttentionSpec with_window(AttentionSpec spec, int left, int right);

// The hash a modifier's source gets in specs: 8 lowercase hex digits of
// its bytes' 64-bit FNV-1a.
std::string modifier_hash_of(std::string_view source);

// Whether `name` can name a modifier: a lowercase letter, then up to 31
// lowercase letters and digits.
bool is_modifier_name(std::string_view name);

// The scale used when the caller gives none: 1 / sqrt(head_dim).
float default_scale(int head_dim);

// The grammar of the canonical string, for error messages and the CLI's help.
extern const char* const kSpecGrammar;

}  // namespace attnforge
