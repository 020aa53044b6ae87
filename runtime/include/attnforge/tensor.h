// A view of a tensor the caller owns: pointer, element type, shape, strides
// (in elements) and the device its memory lives on. attnforge never keeps it
// past a call.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace attnforge {

// i32: key lengths, page tables and offsets; i8: an 8-bit KV cache's int8
// rows (kv8); f8e4m3: fp8 e4m3 codes, a byte each (kvfp8).
enum class ElementType { f32, f16, bf16, i32, i8, f8e4m3 };
enum class Device { cpu, cuda };

// Bytes per element.
int element_bytes(ElementType type);
const char* to_string(ElementType type);
const char* to_string(Device device);

struct TensorView {
  static constexpr int kMaxRank = 4;

  void* data = nullptr;
  ElementType type = ElementType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};    // outermost first, e.g. [B, H, L, D]
  int64_t strides[kMaxRank] = {};  // in elements, outermost first
  Device device = Device::cpu;

  // A densely packed (row-major) view.
  static TensorView contiguous(void* data, ElementType type, std::initializer_list<int64_t> shape,
                               Device device = Device::cpu);
  // A view with explicit strides (one per dimension, in elements).
  static TensorView strided(void* data, ElementType type, std::initializer_list<int64_t> shape,
                            std::initializer_list<int64_t> strides, Device device = Device::cpu);
};

}  // namespace attnforge
