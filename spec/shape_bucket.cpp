#include "shape_bucket.h"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

namespace attnforge {

namespace {

int power_of_two_at_or_above(int value, int floor) {
  int bucket = floor;
  while (bucket < value) bucket *= 2;
  return bucket;
}

}  // namespace

int length_bucket(int length) {
  return power_of_two_at_or_above(length, 16);
}
int query_bucket(int q_len) {
  return q_len == 1 ? 1 : length_bucket(q_len);
}
int batch_bucket(int batch) {
  return power_of_two_at_or_above(batch, 1);
}

std::string shape_bucket(int batch, int q_len, int kv_len) {
  if (batch < 1 || q_len < 1 || kv_len < 1 || batch > (1 << 24) || q_len > (1 << 28) ||
      kv_len > (1 << 28)) {
    throw std::invalid_argument(
        fmt::format("shape bucket: batch {}, Lq {}, Lk {} out of range", batch, q_len, kv_len));
  }
  return fmt::format("b{}.q{}.k{}", batch_bucket(batch), query_bucket(q_len),
                     length_bucket(kv_len));
}

ShapeBucket parse_shape_bucket(const std::string& text) {
  ShapeBucket bucket;
  char tail = 0;
  if (std::sscanf(text.c_str(), "b%d.q%d.k%d%c", &bucket.batch, &bucket.q_len, &bucket.kv_len,
                  &tail) != 3 ||
      bucket.batch < 1 || bucket.q_len < 1 || bucket.kv_len < 1 ||
      shape_bucket(bucket.batch, bucket.q_len, bucket.kv_len) != text) {
    throw std::invalid_argument("'" + text + "' is not a shape bucket such as b1.q2048.k2048");
  }
  return bucket;
}

}  // namespace attnforge
