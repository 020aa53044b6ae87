// Shape buckets: kernels are tuned per bucket, and a schedule tuned at one
// shape serves every shape of its bucket (the runtime dispatches by bucket). A length's bucket is
// the power of two at or above it, at least 16 (so "q2048" serves Lq 1025..2048); batch buckets
// likewise, from 1. One query row is a bucket of its own ("q1"): decoding reads
// the cache for one row, where 2 to 16 rows (speculative decoding, chunks) want
// tiles that share each K/V row among them.
#pragma once

#include <string>

namespace attnforge {

int length_bucket(int length);
int query_bucket(int q_len);  // length_bucket, but 1 for one row
int batch_bucket(int batch);

// e.g. "b1.q2048.k2048"; throws std::invalid_argument for a size below 1.
std::string shape_bucket(int batch, int q_len, int kv_len);

struct ShapeBucket {
  int batch = 0, q_len = 0, kv_len = 0;  // the largest shape of the bucket
};

// The inverse of shape_bucket; throws std::invalid_argument for other text.
ShapeBucket parse_shape_bucket(const std::string& text);

}  // namespace attnforge
