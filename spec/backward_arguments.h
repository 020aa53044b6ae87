// The tensors and scalars of one attention backward call (dQ, dK and dV from
// Q, K, V, the forward's output and row log-sum-exp, and the output's
// gradient), and the argv its kernel takes them in. Needs only Halide's
// runtime header, like kernel_arguments.h, whose table form it shares.
#pragma once

#include <HalideRuntime.h>

#include <array>
#include <optional>

#include "attention_spec.h"
#include "kernel_arguments.h"

namespace attnforge {

struct BackwardArguments {
  halide_buffer_t* q = nullptr;  // (d, position, head, batch) innermost first, as forward
  halide_buffer_t* k = nullptr;  // (d, key, kv head, batch)
  halide_buffer_t* v = nullptr;
  halide_buffer_t* out = nullptr;    // the forward's output, (d, position, head, batch)
  halide_buffer_t* d_out = nullptr;  // the loss's gradient by out, same shape
  // f32 (position, head, batch): the forward's log of each row's sum of
  // exp(logit); +inf for a row that sees no key, whose gradients are zeros.
  halide_buffer_t* lse = nullptr;
  halide_buffer_t* key_lengths = nullptr;   // key padding only: int32 [B]
  halide_buffer_t* bias = nullptr;          // bias tensor only: (Lk, Lq, H, B)
  halide_buffer_t* alibi_slopes = nullptr;  // ALiBi only: f32 [H]
  float scale = 0.0f;
  int32_t window_left = 0;  // a window given per call (spec.run_time_window) only
  int32_t window_right = 0;
  halide_buffer_t* dq = nullptr;  // as q
  halide_buffer_t* dk = nullptr;  // as k: summed over each KV head's query heads
  halide_buffer_t* dv = nullptr;  // as v, likewise
  // .dbias only: the loss's gradient by the bias, (Lk, Lq, H, B) as bias;
  // 0 where the mask hides a key.
  halide_buffer_t* d_bias = nullptr;
};

// clang-format off
enum class BackwardArgument { q, k, v, out, d_out, lse, key_lengths, bias, alibi_slopes, scale, window_left, window_right, dq, dk, dv, d_bias };
// clang-format on
using BackwardArgumentSlot = ArgumentSlot<BackwardArgument, AttentionSpec, BackwardArguments>;

const std::array<BackwardArgumentSlot, 16>& backward_argument_table();

// Where scalar `argument` lies in `args`.
void* scalar_address(BackwardArguments& args, BackwardArgument argument);

template <typename Visit>
void for_each_backward_argument(const AttentionSpec& spec, Visit&& visit) {
  for_each_needed(backward_argument_table(), spec, visit);
}

// Why `spec` has no backward kernel (a SpecError naming the field), or
// nothing: paged and 8-bit caches are for decoding, returned weights and
// modifiers have no gradient rule yet.
std::optional<SpecError> backward_misfit(const AttentionSpec& spec);

// The forward spec whose out and lse a backward spec's kernel reads: with
// .lse, without .dbias (a backward's output).
AttentionSpec forward_spec_of(AttentionSpec backward_spec);

// As the forward's: every input with no device copy yet marked changed on
// the host, so a GPU kernel copies it.
void mark_host_inputs_dirty(BackwardArguments& args);

// Pointers in the backward kernel's argument order (kernel_argv's form).
// Throws SpecError naming an argument the spec needs that is null.
KernelArgv backward_argv(const AttentionSpec& spec, BackwardArguments& args);

}  // namespace attnforge
