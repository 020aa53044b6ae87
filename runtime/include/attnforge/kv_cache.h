// Writing an 8-bit KV cache: new K or V rows quantized into the cache and
// scales that attention() reads (AttentionOptions::k_scale, v_scale).
// - i8 cache (kv8): each row of D values gets its own scale, max|x| / 127,
//   written to `scales`, and each value the nearest int8 level, ties to even.
// - f8e4m3 cache (kvfp8): `scales` holds one f32 scale per KV head, given
//   (calibrated by the caller, e.g. max|x| / 448 over a prefill's rows) and
//   only read; each value becomes the e4m3 code nearest to value / scale,
//   ties to even, saturating at +-448 (no NaN code is ever written).
#pragma once

#include "status.h"
#include "tensor.h"

namespace attnforge {

// Writes `rows` [B, H_kv, n, D] (f32, f16 or bf16, CPU memory) at positions
// positions[b] .. positions[b] + n - 1 of each sequence b (int32 [B]): one
// decoding step's rows (n = 1) or a prefill's.
// - Contiguous: cache [B, H_kv, Lk, D]; kv8 scales f32 [B, H_kv, Lk].
// - Paged (page_table int32 [B, max_pages]): cache [num_pages, H_kv,
//   page_size, D]; kv8 scales f32 [num_pages, H_kv, page_size]; position p
//   of sequence b is row p % page_size of page page_table[b][p / page_size].
// - kvfp8 scales: f32 [H_kv], each finite and above 0.
// Call it once for K (into k and k_scale) and once for V. Every argument is
// checked before anything is written: positions within the cache or the
// table, table entries naming pages, no row written twice, finite values.
// On an error, cache and scales are unchanged.
Status write_quantized_rows(const TensorView& rows, const TensorView& positions,
                            const TensorView& cache, const TensorView& scales,
                            const TensorView* page_table = nullptr);

}  // namespace attnforge
