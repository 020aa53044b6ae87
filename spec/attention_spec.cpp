#include "attention_spec.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dtype_traits.h"

namespace attnforge {

const char* const kSpecGrammar =
    "mask['.br']['.kpad'['.page<P>']]['.bias'|'.alibi']['.softcap<C>']['.mod<name>_<hash>'].heads."
    "d<D>.dtype['.kv8'|'.kvfp8']['.weights']['.lse']['.dbias'] where "
    "mask = full | causal | window<L>_<R> | window (sizes given per call), "
    "softcap<C> = tanh(s / C) * C on the scaled logits, C written with p for a decimal point "
    "(softcap30, softcap2p5), mod<name>_<hash> = a user's score and mask rule and the 8 hex "
    "digits of its source's hash (moddocument_1a2b3c4d), heads = mha<H> | gqa<H>x<Hkv> | mqa<H>, "
    "dtype = f32 | f16 | bf16, kv8 = K and V stored as int8 with a scale per row, "
    "kvfp8 = as fp8 e4m3 with a scale per KV head, lse = also each row's log-sum-exp, "
    "dbias = a backward that also writes the bias tensor's gradient "
    "(e.g. causal.gqa32x8.d128.f16, causal.br.kpad.gqa32x8.d128.bf16.kv8)";

namespace {

constexpr int kMaxHeadDim = 512;
constexpr int kMaxHeads = 4096;
constexpr int kMaxPageSize = 4096;

std::vector<std::string_view> split_dots(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    tokens.push_back(text.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return tokens;
    start = dot + 1;
  }
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// A canonical decimal: digits only, no sign, no leading zero, fits in int.
bool parse_canonical_int(std::string_view digits, int& value) {
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return result.ec == std::errc() && result.ptr == digits.data() + digits.size();
}

int require_int(std::string_view digits, const std::string& field, std::string_view token) {
  int value = 0;
  if (!parse_canonical_int(digits, value)) {
    throw SpecError(field, fmt::format("'{}' is not a canonical non-negative integer in token '{}'",
                                       digits, token));
  }
  return value;
}

void parse_mask(std::string_view token, AttentionSpec& spec) {
  if (token == "full") {
    spec.mask = PositionMask::none;
  } else if (token == "causal") {
    spec.mask = PositionMask::causal;
  } else if (token == "window") {
    spec.mask = PositionMask::window;
    spec.run_time_window = true;
  } else if (starts_with(token, "window")) {
    std::string_view sizes = token.substr(6);
    size_t sep = sizes.find('_');
    if (sep == std::string_view::npos) {
      throw SpecError("window", fmt::format("'{}' must be window<L>_<R>, e.g. window256_0, or "
                                            "window (sizes given per call)",
                                            token));
    }
    spec.mask = PositionMask::window;
    spec.window_left = require_int(sizes.substr(0, sep), "window_left", token);
    spec.window_right = require_int(sizes.substr(sep + 1), "window_right", token);
  } else {
    throw SpecError("mask", fmt::format("'{}' is not a mask; expected full, causal, "
                                        "window<L>_<R> or window",
                                        token));
  }
}

void parse_heads(std::string_view token, AttentionSpec& spec) {
  if (starts_with(token, "mha")) {
    spec.heads = spec.kv_heads = require_int(token.substr(3), "heads", token);
  } else if (starts_with(token, "mqa")) {
    spec.heads = require_int(token.substr(3), "heads", token);
    spec.kv_heads = 1;
  } else if (starts_with(token, "gqa")) {
    std::string_view counts = token.substr(3);
    size_t sep = counts.find('x');
    if (sep == std::string_view::npos) {
      throw SpecError("heads", fmt::format("'{}' must be gqa<H>x<Hkv>, e.g. gqa32x8", token));
    }
    spec.heads = require_int(counts.substr(0, sep), "heads", token);
    spec.kv_heads = require_int(counts.substr(sep + 1), "kv_heads", token);
  } else {
    throw SpecError("heads", fmt::format("'{}' is not a head layout; expected mha<H>, "
                                         "gqa<H>x<Hkv> or mqa<H>",
                                         token));
  }
}

DType parse_dtype(std::string_view token) {
  for (const DTypeTraits& traits : dtype_table()) {
    if (token == traits.name) return traits.dtype;
  }
  throw SpecError("dtype", fmt::format("'{}' is not a dtype; expected f32, f16 or bf16", token));
}

// The shortest fixed-point text that reads back as `cap`, with p for the
// decimal point (the spec string's tokens are separated by dots).
std::string softcap_text(float cap) {
  char text[64];
  auto result = std::to_chars(text, text + sizeof text, cap, std::chars_format::fixed);
  std::string digits(text, result.ptr);
  for (char& c : digits) {
    if (c == '.') c = 'p';
  }
  return digits;
}

float parse_softcap(std::string_view token) {
  std::string digits(token.substr(7));
  for (char& c : digits) {
    if (c == 'p') c = '.';
  }
  float cap = 0.0f;
  auto result =
      std::from_chars(digits.data(), digits.data() + digits.size(), cap, std::chars_format::fixed);
  if (digits.empty() || digits[0] == '-' || result.ec != std::errc() ||
      result.ptr != digits.data() + digits.size()) {
    throw SpecError("softcap", fmt::format("'{}' must be softcap<C> with C a positive number "
                                           "written with p for a decimal point, e.g. softcap30 "
                                           "or softcap2p5",
                                           token));
  }
  if (cap == 0.0f) {
    throw SpecError("softcap", fmt::format("'{}' caps nothing; leave the token out", token));
  }
  return cap;
}

void parse_modifier(std::string_view token, AttentionSpec& spec) {
  const std::string_view body = token.substr(3);
  const size_t sep = body.rfind('_');
  if (sep == std::string_view::npos) {
    throw SpecError("modifier", fmt::format("'{}' must be mod<name>_<hash>, e.g. "
                                            "moddocument_1a2b3c4d",
                                            token));
  }
  spec.modifier = std::string(body.substr(0, sep));
  spec.modifier_hash = std::string(body.substr(sep + 1));
}

std::string heads_token(const AttentionSpec& spec) {
  if (spec.heads == spec.kv_heads) return fmt::format("mha{}", spec.heads);
  if (spec.kv_heads == 1) return fmt::format("mqa{}", spec.heads);
  return fmt::format("gqa{}x{}", spec.heads, spec.kv_heads);
}

}  // namespace

std::string_view to_string(PositionMask mask) {
  switch (mask) {
    case PositionMask::none:  // as the spec string writes it
      return "full";
    case PositionMask::causal:
      return "causal";
    case PositionMask::window:
      return "window";
  }
  return "?";
}

std::string_view to_string(Alignment alignment) {
  return alignment == Alignment::top_left ? "top_left" : "bottom_right";
}

std::string_view to_string(BiasKind bias) {
  switch (bias) {
    case BiasKind::none:
      return "none";
    case BiasKind::tensor:
      return "tensor";
    case BiasKind::alibi:
      return "alibi";
  }
  return "?";
}

std::string_view to_string(DType dtype) {
  return traits_of(dtype).name;
}

std::string_view to_string(KvStorage storage) {
  switch (storage) {
    case KvStorage::int8:
      return "kv8";
    case KvStorage::fp8_e4m3:
      return "kvfp8";
    case KvStorage::dtype:
      break;
  }
  return "dtype";
}

AttentionSpec with_window(AttentionSpec spec, int left, int right) {
  if (!spec.run_time_window) return spec;
  spec.run_time_window = false;
  spec.window_left = left;
  spec.window_right = right;
  return spec;
}

std::string modifier_hash_of(std::string_view source) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : source) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return fmt::format("{:08x}", static_cast<uint32_t>(hash ^ (hash >> 32)));
}

bool is_modifier_name(std::string_view name) {
  if (name.empty() || name.size() > 32 || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

float default_scale(int head_dim) {
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

void AttentionSpec::validate() const {
  if (heads < 1 || heads > kMaxHeads) {
    throw SpecError("heads", fmt::format("{} query heads; expected 1..{}", heads, kMaxHeads));
  }
  if (kv_heads < 1 || kv_heads > heads) {
    throw SpecError("kv_heads",
                    fmt::format("{} key/value heads; expected 1..heads ({})", kv_heads, heads));
  }
  if (heads % kv_heads != 0) {
    throw SpecError("kv_heads", fmt::format("{} query heads are not divisible by {} key/value "
                                            "heads",
                                            heads, kv_heads));
  }
  if (head_dim < 1 || head_dim > kMaxHeadDim) {
    throw SpecError("head_dim", fmt::format("{}; expected 1..{}", head_dim, kMaxHeadDim));
  }
  if (run_time_window && mask != PositionMask::window) {
    throw SpecError("window", "sizes given per call need a window mask");
  }
  if (run_time_window && (window_left != 0 || window_right != 0)) {
    throw SpecError("window", fmt::format("sizes ({}, {}) compiled into a window whose sizes are "
                                          "given per call",
                                          window_left, window_right));
  }
  if (!(softcap == 0.0f || (softcap >= kMinSoftcap && softcap <= kMaxSoftcap))) {
    throw SpecError("softcap", fmt::format("{}; expected 0 (none) or {}..{}", softcap, kMinSoftcap,
                                           kMaxSoftcap));
  }
  if (modified() || !modifier_hash.empty()) {
    if (!is_modifier_name(modifier)) {
      throw SpecError("modifier", fmt::format("'{}' is not a modifier name: a lowercase letter, "
                                              "then up to 31 lowercase letters and digits",
                                              modifier));
    }
    if (modifier_hash.size() != 8 ||
        modifier_hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw SpecError("modifier_hash",
                      fmt::format("'{}' for modifier '{}'; expected 8 lowercase hex digits",
                                  modifier_hash, modifier));
    }
  }
  if (mask == PositionMask::window) {
    if (window_left < 0 || window_right < 0) {
      throw SpecError(
          "window", fmt::format("sizes ({}, {}) must be non-negative", window_left, window_right));
    }
  } else if (window_left != 0 || window_right != 0) {
    throw SpecError("window", fmt::format("sizes ({}, {}) given on a spec whose mask is '{}'; "
                                          "only a window mask has sizes",
                                          window_left, window_right, attnforge::to_string(mask)));
  }
  if (page_size < 0 || page_size > kMaxPageSize) {
    throw SpecError("page_size", fmt::format("{}; expected 0 (a contiguous cache) or 1..{}",
                                             page_size, kMaxPageSize));
  }
  if (paged() && !key_padding) {
    throw SpecError("page_size",
                    "a paged cache needs key padding (.kpad): its lengths are per sequence");
  }
  if (paged() && (bias == BiasKind::tensor || return_weights)) {
    throw SpecError("page_size",
                    fmt::format("a paged cache has no contiguous key positions for {}",
                                return_weights ? "returned weights" : "a bias tensor"));
  }
  if (bias_grad && bias != BiasKind::tensor) {
    throw SpecError("bias_grad", "dBias (.dbias) is the gradient of a bias tensor (.bias)");
  }
  if (bias_grad && (return_lse || return_weights)) {
    throw SpecError("bias_grad",
                    "dBias (.dbias) is a backward kernel's; its spec has no "
                    ".lse or .weights");
  }
  if (alignment == Alignment::bottom_right && !positional()) {
    throw SpecError("alignment", "bottom_right alignment needs a causal or window mask or ALiBi");
  }
}

std::string AttentionSpec::to_string() const {
  validate();
  std::string text = mask == PositionMask::window && !run_time_window
                         ? fmt::format("window{}_{}", window_left, window_right)
                         : std::string(attnforge::to_string(mask));
  if (alignment == Alignment::bottom_right) text += ".br";
  if (key_padding) text += ".kpad";
  if (paged()) text += fmt::format(".page{}", page_size);
  if (bias == BiasKind::tensor) text += ".bias";
  if (bias == BiasKind::alibi) text += ".alibi";
  if (softcapped()) text += ".softcap" + softcap_text(softcap);
  if (modified()) text += fmt::format(".mod{}_{}", modifier, modifier_hash);
  text += fmt::format(".{}.d{}.{}", heads_token(*this), head_dim, attnforge::to_string(dtype));
  if (quantized_kv()) text += fmt::format(".{}", attnforge::to_string(kv_storage));
  if (return_weights) text += ".weights";
  if (return_lse) text += ".lse";
  if (bias_grad) text += ".dbias";
  return text;
}

AttentionSpec AttentionSpec::parse(std::string_view text) {
  std::vector<std::string_view> tokens = split_dots(text);
  AttentionSpec spec;
  size_t next = 0;
  auto take_if = [&](std::string_view expected) {
    if (next < tokens.size() && tokens[next] == expected) {
      ++next;
      return true;
    }
    return false;
  };
  auto take = [&](const char* field) -> std::string_view {
    if (next >= tokens.size()) {
      throw SpecError(
          field, fmt::format("'{}' ends before the {}; grammar: {}", text, field, kSpecGrammar));
    }
    return tokens[next++];
  };

  parse_mask(take("mask"), spec);
  if (take_if("br")) spec.alignment = Alignment::bottom_right;
  spec.key_padding = take_if("kpad");
  if (next < tokens.size() && starts_with(tokens[next], "page")) {
    spec.page_size = require_int(tokens[next].substr(4), "page_size", tokens[next]);
    ++next;
    if (spec.page_size == 0) throw SpecError("page_size", "page0 has no positions");
  }
  if (take_if("bias")) {
    spec.bias = BiasKind::tensor;
  } else if (take_if("alibi")) {
    spec.bias = BiasKind::alibi;
  }
  if (next < tokens.size() && starts_with(tokens[next], "softcap")) {
    spec.softcap = parse_softcap(tokens[next++]);
  }
  if (next < tokens.size() && starts_with(tokens[next], "mod")) {
    parse_modifier(tokens[next++], spec);
  }
  parse_heads(take("heads"), spec);
  std::string_view dim = take("head_dim");
  if (!starts_with(dim, "d")) {
    throw SpecError("head_dim", fmt::format("'{}' must be d<D>, e.g. d64", dim));
  }
  spec.head_dim = require_int(dim.substr(1), "head_dim", dim);
  spec.dtype = parse_dtype(take("dtype"));
  if (take_if("kv8")) {
    spec.kv_storage = KvStorage::int8;
  } else if (take_if("kvfp8")) {
    spec.kv_storage = KvStorage::fp8_e4m3;
  }
  spec.return_weights = take_if("weights");
  spec.return_lse = take_if("lse");
  spec.bias_grad = take_if("dbias");
  if (next != tokens.size()) {
    throw SpecError("spec", fmt::format("unexpected token '{}' in '{}'; grammar: {}", tokens[next],
                                        text, kSpecGrammar));
  }
  spec.validate();
  if (spec.to_string() != text) {
    throw SpecError("heads",
                    fmt::format("'{}' is not canonical; write '{}'", text, spec.to_string()));
  }
  return spec;
}

bool AttentionSpec::operator==(const AttentionSpec& o) const {
  return mask == o.mask && alignment == o.alignment && window_left == o.window_left &&
         window_right == o.window_right && run_time_window == o.run_time_window &&
         key_padding == o.key_padding && softcap == o.softcap && modifier == o.modifier &&
         modifier_hash == o.modifier_hash && page_size == o.page_size && bias == o.bias &&
         heads == o.heads && kv_heads == o.kv_heads && head_dim == o.head_dim && dtype == o.dtype &&
         kv_storage == o.kv_storage && return_weights == o.return_weights &&
         return_lse == o.return_lse && bias_grad == o.bias_grad;
}

}  // namespace attnforge
