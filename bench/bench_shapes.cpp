#include "bench_shapes.h"

#include <stdexcept>

#include "spec/attention_spec.h"

namespace attnforge::bench {

namespace {

// f32, bf16, the int8 cache with f32 and bf16 queries and the fp8 cache with
// bf16 queries, timed in the same turns.
const std::vector<std::string> kGqaDecoding = {
    "causal.br.gqa32x8.d128.f32", "causal.br.gqa32x8.d128.bf16", "causal.br.gqa32x8.d128.f32.kv8",
    "causal.br.gqa32x8.d128.bf16.kv8", "causal.br.gqa32x8.d128.bf16.kvfp8"};

}  // namespace

const std::vector<Shape>& default_shapes() {
  static const std::vector<Shape> shapes = {
      {1, 8, 512, 512, 64},
      {1, 8, 2048, 2048, 64},
      {4, 12, 1024, 1024, 64},
      {1, 8, 4096, 4096, 128},
      {2, 8, 256, 2048, 64},
      // decoding one token over a long cache: where splitting keys pays
      {1, 1, 1, 32768, 128},
      {1, 8, 2048, 2048, 64, {"full.mha8.d64.bf16", "causal.mha8.d64.bf16"}},
      // GQA decoding: memory-bound, rated against the read bandwidth
      {1, 32, 1, 8192, 128, kGqaDecoding},
      {1, 32, 1, 32768, 128, kGqaDecoding},
      {8, 32, 1, 8192, 128, kGqaDecoding},
      {8, 32, 1, 32768, 128, kGqaDecoding},
      // speculative decoding: 8 draft tokens verified over the cache (next to Lq 1 above)
      {1, 32, 8, 32768, 128, kGqaDecoding},
      // a paged cache of 16-position pages next to the same cache in one piece
      {1,
       32,
       1,
       8192,
       128,
       {"causal.br.kpad.gqa32x8.d128.f32", "causal.br.kpad.page16.gqa32x8.d128.f32"}},
      {1,
       32,
       1,
       32768,
       128,
       {"causal.br.kpad.gqa32x8.d128.bf16.kv8", "causal.br.kpad.page16.gqa32x8.d128.bf16.kv8"}},
  };
  return shapes;
}

const std::vector<Shape>& quick_shapes() {
  static const std::vector<Shape> shapes = {{1, 2, 256, 256, 64}, {1, 2, 64, 256, 64}};
  return shapes;
}

Shape parse_shape(const std::string& text) {
  const std::invalid_argument error("shape '" + text + "' is not BxHxLqxLkxD, e.g. 1x8x512x512x64");
  std::vector<int> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('x', start), text.size());
    const std::string field = text.substr(start, end - start);
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(field, &used);
    } catch (const std::exception&) {
      throw error;
    }
    if (used != field.size() || value < 1) throw error;
    values.push_back(value);
    start = end + 1;
  }
  if (values.size() != 5) throw error;
  return {values[0], values[1], values[2], values[3], values[4]};
}

std::vector<std::string> specs_for(const Shape& shape) {
  AttentionSpec full;
  full.heads = full.kv_heads = shape.heads;
  full.head_dim = shape.head_dim;
  AttentionSpec causal = full;
  causal.mask = PositionMask::causal;
  // Cross-attention shapes align the causal mask to the bottom right (a KV cache).
  if (shape.q_len != shape.kv_len) causal.alignment = Alignment::bottom_right;
  return {full.to_string(), causal.to_string()};
}

}  // namespace attnforge::bench
