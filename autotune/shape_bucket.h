// Shape buckets: kernels are tuned per bucket, and a schedule tuned at one
// shape serves every shape of its bucket. A length's bucket is the power of
// two at or above it, at least 16 (so "q2048" serves Lq 1025..2048); batch
// buckets likewise, from 1.
#pragma once

#include <string>

namespace attnforge::autotune {

int length_bucket(int length);
int batch_bucket(int batch);

// e.g. "b1.q2048.k2048"; throws std::invalid_argument for a size below 1.
std::string shape_bucket(int batch, int q_len, int kv_len);

}  // namespace attnforge::autotune
