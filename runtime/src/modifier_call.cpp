#include "modifier_call.h"

#include <fmt/format.h>

#include <set>
#include <string>

#include "spec/key_range_table.h"
#include "tensor_checks.h"

namespace attnforge::runtime {

namespace {

// The runtime's element type of a declared tensor; false where it has none (int16).
bool element_type_of(const ModifierTensorEntry& t, ElementType* type) {
  if (t.type_code == halide_type_int && t.type_bits == 8)
    *type = ElementType::i8;
  else if (t.type_code == halide_type_int && t.type_bits == 32)
    *type = ElementType::i32;
  else if (t.type_code == halide_type_float && t.type_bits == 32)
    *type = ElementType::f32;
  else
    return false;
  return true;
}

const ModifierTensorView* given(const AttentionOptions& options, const char* name) {
  for (const ModifierTensorView& t : options.modifier_tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// The extents of declared tensor `t` in a call of these sizes, outermost first,
// and how to write them ("[B, Lq] = [2, 37]").
std::vector<int64_t> extents_of(const ModifierTensorEntry& t, int64_t batch, int64_t heads,
                                int64_t q_len, int64_t kv_len, std::string* described) {
  std::vector<int64_t> extents;
  std::string names, sizes;
  for (int d = t.rank - 1; d >= 0; --d) {
    const int code = t.extents[d];
    const int64_t extent = code == kModifierBatch     ? batch
                           : code == kModifierHeads   ? heads
                           : code == kModifierQueries ? q_len
                           : code == kModifierKeys    ? kv_len
                                                      : code;
    const std::string name = code == kModifierBatch     ? "B"
                             : code == kModifierHeads   ? "H"
                             : code == kModifierQueries ? "Lq"
                             : code == kModifierKeys    ? "Lk"
                                                        : std::to_string(code);
    names += (names.empty() ? "" : ", ") + name;
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(extent);
    extents.push_back(extent);
  }
  *described = fmt::format("[{}] = [{}]", names, sizes);
  return extents;
}

std::string declared_names(const KernelEntry& kernel) {
  std::string names;
  for (int n = 0; n < kernel.modifier_tensor_count; ++n) {
    names += (names.empty() ? "" : ", ") + std::string(kernel.modifier_tensors[n].name);
  }
  return names.empty() ? "none" : names;
}

// What kept key ranges were computed for: the modifier, the kernel's spec,
// the call's sizes, and a hash of each tensor's values.
std::string cache_key(const AttentionOptions& options, const KernelEntry& kernel, int64_t batch,
                      int64_t q_len, int64_t kv_len) {
  std::string key =
      fmt::format("{} {} {} {} {}", options.modifier, kernel.spec, batch, q_len, kv_len);
  for (int n = 0; n < kernel.modifier_tensor_count; ++n) {
    const TensorView& t = *given(options, kernel.modifier_tensors[n].name)->tensor;
    uint64_t hash = 1469598103934665603ull;  // FNV-1a over the values, in index order
    const int bytes = element_bytes(t.type);
    int64_t count = 1;
    for (int d = 0; d < t.rank; ++d) count *= t.shape[d];
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t offset = 0, rest = flat;
      for (int d = t.rank - 1; d >= 0; --d) {
        offset += (rest % t.shape[d]) * t.strides[d];
        rest /= t.shape[d];
      }
      const auto* value = static_cast<const unsigned char*>(t.data) + offset * bytes;
      for (int b = 0; b < bytes; ++b) hash = (hash ^ value[b]) * 1099511628211ull;
    }
    key += fmt::format(" {:x}", hash);
  }
  return key;
}

}  // namespace

Status check_modifier_options(const AttentionOptions& options, Device device) {
  if (options.modifier.empty()) {
    if (options.modifier_tensors.empty()) return Status::success();
    return invalid("modifier_tensors: given without a modifier (set modifier to its name)");
  }
  if (device != Device::cpu) return invalid("modifier: modifiers run on CPU kernels only");
  if (options.cu_seqlens_q || options.cu_seqlens_k) {
    return invalid("modifier: not with cu_seqlens_q and cu_seqlens_k");
  }
  std::set<std::string> names;
  for (const ModifierTensorView& t : options.modifier_tensors) {
    if (!t.tensor) return invalid(fmt::format("modifier_tensors['{}']: a null tensor", t.name));
    if (!names.insert(t.name).second) {
      return invalid(fmt::format("modifier_tensors: '{}' given twice", t.name));
    }
  }
  return Status::success();
}

Status check_modifier_tensors(const AttentionOptions& options, const KernelEntry& kernel,
                              int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len) {
  for (const ModifierTensorView& t : options.modifier_tensors) {
    bool declared = false;
    for (int n = 0; n < kernel.modifier_tensor_count; ++n) {
      declared = declared || t.name == kernel.modifier_tensors[n].name;
    }
    if (!declared) {
      return invalid(
          fmt::format("modifier_tensors: modifier '{}' reads no tensor '{}'; it reads {}",
                      options.modifier, t.name, declared_names(kernel)));
    }
  }
  for (int n = 0; n < kernel.modifier_tensor_count; ++n) {
    const ModifierTensorEntry& declared = kernel.modifier_tensors[n];
    const std::string label = fmt::format("modifier_tensors['{}']", declared.name);
    const ModifierTensorView* view = given(options, declared.name);
    if (!view) {
      return invalid(fmt::format("{}: modifier '{}' reads it; not given", label, options.modifier));
    }
    ElementType type{};
    if (!element_type_of(declared, &type)) {
      return invalid(
          fmt::format("{}: the modifier declares {}-bit values of type code {}, "
                      "which the runtime cannot pass",
                      label, declared.type_bits, declared.type_code));
    }
    std::string expected;
    const std::vector<int64_t> extents =
        extents_of(declared, batch, heads, q_len, kv_len, &expected);
    ATTNFORGE_CHECK(check_layout(*view->tensor, label.c_str(), declared.rank, expected.c_str()));
    ATTNFORGE_CHECK(check_type(*view->tensor, label.c_str(), type));
    for (int d = 0; d < declared.rank; ++d) {
      if (view->tensor->shape[d] != extents[d]) {
        return invalid(fmt::format("{}: expected shape {}, got {}", label, expected,
                                   shape_text(*view->tensor)));
      }
    }
  }
  return Status::success();
}

int ModifierArguments::prepare(const AttentionOptions& options, const KernelEntry& kernel,
                               int64_t batch, int64_t q_len, int64_t kv_len) {
  const KernelPackage& package = attnforge_kernel_package;
  count_ = static_cast<size_t>(kernel.modifier_tensor_count);
  int error = 0;
  for (size_t n = 0; n < count_ && n < kMaxModifierTensors; ++n) {
    error |= tensors_[n].wrap(*given(options, kernel.modifier_tensors[n].name)->tensor, nullptr,
                              package);
  }
  if (error != 0 || !kernel.key_ranges_argv) return error;
  // (value, row, level, head, batch), innermost first, dense.
  const int64_t extents[5] = {kKeyRangeValues, q_len, kKeyRangeLevels, kernel.key_range_heads,
                              batch};
  int64_t stride = 1;
  for (int d = 0; d < 5; ++d) {
    ranges_dims_[d] = {0, static_cast<int32_t>(extents[d]), static_cast<int32_t>(stride), 0};
    stride *= extents[d];
  }
  ModifierKeyRangeCache* cache = options.key_range_cache;
  std::vector<int32_t>& ranges = cache ? ModifierKeyRangeAccess::ranges(*cache) : ranges_;
  ranges_buffer_.host = nullptr;
  ranges_buffer_.type = {halide_type_int, 32, 1};
  ranges_buffer_.dimensions = 5;
  ranges_buffer_.dim = ranges_dims_;
  const std::string key = cache ? cache_key(options, kernel, batch, q_len, kv_len) : std::string();
  if (cache && ModifierKeyRangeAccess::key(*cache) == key) {
    ranges_buffer_.host = reinterpret_cast<uint8_t*>(ranges.data());
    ModifierKeyRangeAccess::count(*cache, true);
    return 0;
  }
  ranges.assign(static_cast<size_t>(stride), 0);
  ranges_buffer_.host = reinterpret_cast<uint8_t*>(ranges.data());
  int32_t keys = static_cast<int32_t>(kv_len);
  std::vector<void*> argv = {&keys};
  for (size_t n = 0; n < count_; ++n) argv.push_back(tensors_[n].get());
  argv.push_back(&ranges_buffer_);
  error = kernel.key_ranges_argv(argv.data());
  if (cache) {
    ModifierKeyRangeAccess::key(*cache) = error == 0 ? key : std::string();
    ModifierKeyRangeAccess::count(*cache, false);
  }
  return error;
}

void ModifierArguments::attach(KernelArguments& args) {
  for (size_t n = 0; n < count_; ++n) args.modifier_tensors[n] = tensors_[n].get();
  args.modifier_tensor_count = count_;
  if (ranges_buffer_.host) args.modifier_key_ranges = &ranges_buffer_;
}

}  // namespace attnforge::runtime
