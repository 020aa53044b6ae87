// The problem sizes bench_schedules runs, and the specs it runs on each.
#pragma once

#include <string>
#include <vector>

namespace attnforge::bench {

struct Shape {
  int batch = 1, heads = 1, q_len = 1, kv_len = 1, head_dim = 64;
  std::vector<std::string> specs = {};  // the specs run at this shape; empty: specs_for()
};

// Self-attention at growing sizes, one cross-attention shape (Lq < Lk), bf16
// prefill, GQA decoding over long KV caches in f32, bf16 and 8-bit (one query
// row, and 8 as speculative decoding verifies), and decoding from a paged
// cache next to a contiguous one.
const std::vector<Shape>& default_shapes();
// Tiny shapes for a smoke run, one of them cross-attention.
const std::vector<Shape>& quick_shapes();

// "BxHxLqxLkxD", e.g. "1x8x512x512x64"; throws std::invalid_argument.
Shape parse_shape(const std::string& text);

// Canonical spec strings: non-causal, and causal (bottom-right aligned when
// Lq != Lk, as a KV cache is).
std::vector<std::string> specs_for(const Shape& shape);

}  // namespace attnforge::bench
