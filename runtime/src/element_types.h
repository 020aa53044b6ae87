// The runtime's element types and the spec's storage types: f32, f16 and
// bf16 are DTypes, described once in spec/dtype_traits.h; i32 (key lengths,
// page tables) and i8 (an 8-bit KV cache) are the runtime's own.
#pragma once

#include <HalideRuntime.h>

#include "attnforge/tensor.h"
#include "spec/attention_spec.h"

namespace attnforge::runtime {

// i8 and f8e4m3: the element types of an 8-bit KV cache.
bool is_cache_type(ElementType type);
bool is_storage_type(ElementType type);
// The DType of a float element type (f32 for i32, which is not one).
DType storage_type(ElementType type);
halide_type_t halide_type_of(ElementType type);
// The type a kernel on `device` takes `type` as (spec/kernel_arguments.h).
halide_type_t kernel_halide_type(ElementType type, Device device);

}  // namespace attnforge::runtime
