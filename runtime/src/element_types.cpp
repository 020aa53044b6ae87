#include "element_types.h"

#include "spec/dtype_traits.h"
#include "spec/kernel_arguments.h"

namespace attnforge {

namespace runtime {

bool is_cache_type(ElementType type) {
  return type == ElementType::i8 || type == ElementType::f8e4m3;
}

bool is_storage_type(ElementType type) {
  return type != ElementType::i32 && !is_cache_type(type);
}

DType storage_type(ElementType type) {
  return type == ElementType::f16    ? DType::f16
         : type == ElementType::bf16 ? DType::bf16
                                     : DType::f32;
}

halide_type_t halide_type_of(ElementType type) {
  if (type == ElementType::i8) return halide_type_t(halide_type_int, 8);
  if (type == ElementType::f8e4m3) return halide_type_t(halide_type_uint, 8);
  if (!is_storage_type(type)) return halide_type_t(halide_type_int, 32);
  return traits_of(storage_type(type)).halide_type;
}

halide_type_t kernel_halide_type(ElementType type, Device device) {
  if (!is_storage_type(type)) return halide_type_of(type);
  return attnforge::kernel_halide_type(storage_type(type), device == Device::cuda);
}

}  // namespace runtime

int element_bytes(ElementType type) {
  if (runtime::is_cache_type(type)) return 1;
  return runtime::is_storage_type(type) ? traits_of(runtime::storage_type(type)).bytes : 4;
}

const char* to_string(ElementType type) {
  // The table's names are string literals.
  if (type == ElementType::i8) return "i8";
  if (type == ElementType::f8e4m3) return "f8e4m3";
  return runtime::is_storage_type(type) ? traits_of(runtime::storage_type(type)).name.data()
                                        : "i32";
}

}  // namespace attnforge
