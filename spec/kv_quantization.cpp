#include "kv_quantization.h"

#include <algorithm>
#include <cmath>

#include "dtype_traits.h"

namespace attnforge {

float quantize_row(const float* values, int count, int8_t* quantized) {
  float largest = 0.0f;
  for (int n = 0; n < count; ++n) largest = std::max(largest, std::fabs(values[n]));
  const float scale = largest / kInt8Levels;
  for (int n = 0; n < count; ++n) {
    const float level = scale > 0.0f ? std::nearbyint(values[n] / scale) : 0.0f;
    quantized[n] = static_cast<int8_t>(std::clamp(level, -127.0f, 127.0f));
  }
  return scale;
}

int cache_element_bytes(const AttentionSpec& spec) {
  return spec.quantized_kv() ? 1 : traits_of(spec.dtype).bytes;
}

double cache_row_bytes(const AttentionSpec& spec) {
  return double(spec.head_dim) * cache_element_bytes(spec) + (spec.quantized_kv() ? 4 : 0);
}

}  // namespace attnforge
