// The tensors and scalars of one attention call, and the argv a compiled
// kernel (JIT Callable or AOT *_argv function) takes them in. Needs only
// Halide's runtime header, so callers without the compiler can use it.
#pragma once

#include <HalideRuntime.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

#include "attention_spec.h"

namespace attnforge {

// The most tensors one modifier (algorithm/modifier.h) may read.
constexpr size_t kMaxModifierTensors = 4;

struct KernelArguments {
  halide_buffer_t* q = nullptr;  // every tensor is (d, position, head, batch) innermost first
  halide_buffer_t* k = nullptr;
  halide_buffer_t* v = nullptr;
  // An 8-bit cache only. kv8 (k and v int8): f32 (position, kv head, batch),
  // or (position in page, kv head, page) paged; key j's K row is
  // k(:, j) * k_scale(j). kvfp8 (k and v e4m3 codes, uint8): f32 (kv head).
  halide_buffer_t* k_scale = nullptr;
  halide_buffer_t* v_scale = nullptr;
  halide_buffer_t* key_lengths = nullptr;  // key padding only: int32 [B]
  // Paged cache only: int32 (max_pages, B); k and v are then (d, position in
  // page, kv head, page).
  halide_buffer_t* page_table = nullptr;
  halide_buffer_t* bias = nullptr;          // bias tensor only: (Lk, Lq, H, B); stride 0 broadcasts
  halide_buffer_t* alibi_slopes = nullptr;  // ALiBi only: f32 [H]
  float scale = 0.0f;
  // A window given per call (spec.run_time_window) only: its sizes, >= 0.
  int32_t window_left = 0;
  int32_t window_right = 0;
  // A modifier's tensors (spec.modified()), in the order it declares them;
  // the kernel takes them after the table's inputs, before out.
  std::array<halide_buffer_t*, kMaxModifierTensors> modifier_tensors{};
  size_t modifier_tensor_count = 0;
  // A modifier with a mask rule: int32 (2, Lq, 9, 1 or H, B), the keys runs
  // of query rows see by the rule (algorithm/modifier_key_ranges.h); the
  // kernel takes it after the modifier's tensors.
  halide_buffer_t* modifier_key_ranges = nullptr;
  halide_buffer_t* out = nullptr;
  halide_buffer_t* weights = nullptr;  // return_weights only: (Lk, Lq, H, B)
  halide_buffer_t* lse = nullptr;      // return_lse only: f32 (Lq, H, B)
};

// storage: the spec's dtype; cache: the KV cache's (the dtype, int8 with kv8,
// uint8 e4m3 codes with kvfp8).
enum class ArgumentElement { storage, cache, int32, float32 };

// One argument of a kernel, a row of its argument table. The table lists
// them in the order the kernel takes them: its Generator declares its inputs
// and outputs from the table, and the argv is built from it.
template <typename Argument, typename Spec, typename Arguments>
struct ArgumentSlot {
  Argument argument;
  const char* name;
  ArgumentElement element;
  int dimensions;  // 0: a scalar (the scale, a window's sizes)
  bool output;
  bool (*needed)(const Spec& spec);
  halide_buffer_t* Arguments::*buffer;  // nullptr for a scalar: scalar_address finds it
};

// Calls visit(slot) for each row of `table` a kernel of `spec` takes, in order.
template <typename Slot, size_t N, typename Spec, typename Visit>
void for_each_needed(const std::array<Slot, N>& table, const Spec& spec, Visit&& visit) {
  for (const Slot& slot : table) {
    if (slot.needed(spec)) visit(slot);
  }
}

// clang-format off
enum class KernelArgument { q, k, v, k_scale, v_scale, key_lengths, page_table, bias, alibi_slopes, scale, window_left, window_right, out, weights, lse };
// clang-format on
using KernelArgumentSlot = ArgumentSlot<KernelArgument, AttentionSpec, KernelArguments>;

const std::array<KernelArgumentSlot, 15>& kernel_argument_table();

// Where scalar `argument` lies in `args`.
void* scalar_address(KernelArguments& args, KernelArgument argument);

// The slot's rank for `spec`: kvfp8's scales are one per KV head.
int argument_dimensions(const AttentionSpec& spec, const KernelArgumentSlot& slot);

template <typename Visit>
void for_each_kernel_argument(const AttentionSpec& spec, Visit&& visit) {
  for_each_needed(kernel_argument_table(), spec, visit);
}

// Marks every input that has no device copy yet as changed on the host, so
// a GPU kernel copies it to its device (Halide copies only host-dirty data);
// a CPU kernel ignores the flag.
void mark_host_inputs_dirty(KernelArguments& args);

// Pointers in the kernel's argument order: buffers as halide_buffer_t*,
// scalars by address. Fixed storage, so a call allocates nothing; one slot
// before the arguments holds a JIT call's user context.
class KernelArgv {
 public:
  void push(void* argument) { slots_[1 + count_++] = argument; }
  size_t size() const { return count_; }
  // For an AOT *_argv entry point.
  void** data() { return &slots_[1]; }
  // For a JIT Callable: the context first, then the arguments.
  const void* const* with_context(const void* context) {
    slots_[0] = const_cast<void*>(context);
    return slots_.data();
  }

 private:
  // The context and up to 21 arguments (a cross-attention layer's with every
  // option; attention's with every option and a modifier's tensors).
  std::array<void*, 22> slots_{};
  size_t count_ = 0;
};

// The runtime type of a storage dtype, for the buffers a kernel takes.
halide_type_t halide_type_of(DType dtype);
// The type a kernel takes a `dtype` tensor as: a CUDA kernel takes bf16 as
// its 16 bits (uint16), since Halide's CUDA back end has no bf16.
halide_type_t kernel_halide_type(DType dtype, bool cuda);
// The type of a `spec` kernel's `element` argument (cuda: as a CUDA kernel takes it).
halide_type_t argument_halide_type(const AttentionSpec& spec, ArgumentElement element, bool cuda);

// While alive, the bf16 buffers of `args` have the type a CUDA kernel takes
// them as (uint16), where `cuda`; their types are restored after.
class KernelStorageTypes {
 public:
  KernelStorageTypes(KernelArguments& args, bool cuda);
  // The same for any of a kernel's buffers (null ones skipped), where `as_bits`.
  KernelStorageTypes(std::initializer_list<halide_buffer_t*> buffers, bool as_bits);
  ~KernelStorageTypes();
  KernelStorageTypes(const KernelStorageTypes&) = delete;
  KernelStorageTypes& operator=(const KernelStorageTypes&) = delete;

 private:
  std::vector<std::pair<halide_buffer_t*, halide_type_t>> saved_;
};

// `buffer`, or SpecError naming the argument when it is null.
void* required_argument(halide_buffer_t* buffer, const char* name);

// The argv of `table`'s arguments that `spec` needs, from `args` (which must
// outlive it). Throws SpecError naming an argument the spec needs that is null.
template <typename Slot, size_t N, typename Spec, typename Arguments>
KernelArgv argv_of(const std::array<Slot, N>& table, const Spec& spec, Arguments& args) {
  KernelArgv argv;
  for_each_needed(table, spec, [&](const Slot& slot) {
    argv.push(slot.buffer ? required_argument(args.*slot.buffer, slot.name)
                          : scalar_address(args, slot.argument));
  });
  return argv;
}

KernelArgv kernel_argv(const AttentionSpec& spec, KernelArguments& args);

}  // namespace attnforge
