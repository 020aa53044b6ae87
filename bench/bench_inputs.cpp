#include "bench_inputs.h"

#include <algorithm>
#include <random>

namespace attnforge::bench {

BenchInputs::BenchInputs(const AttentionSpec& spec, const Shape& shape, uint32_t seed)
    : q(shape.head_dim, shape.q_len, spec.heads, shape.batch),
      k(shape.head_dim, shape.kv_len, spec.kv_heads, shape.batch),
      v(shape.head_dim, shape.kv_len, spec.kv_heads, shape.batch),
      out(shape.head_dim, shape.q_len, spec.heads, shape.batch),
      expected(shape.head_dim, shape.q_len, spec.heads, shape.batch) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Tensor* t : {&q, &k, &v}) std::generate(t->begin(), t->end(), [&] { return uniform(rng); });
  args.q = q.raw_buffer();
  args.k = k.raw_buffer();
  args.v = v.raw_buffer();
  args.out = out.raw_buffer();
  args.scale = default_scale(spec.head_dim);
}

}  // namespace attnforge::bench
