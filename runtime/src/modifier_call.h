// A call's modifier (AttentionOptions::modifier): its tensors checked against
// what the chosen kernel's modifier declares, wrapped as the kernel takes
// them, and the key ranges of its mask rule computed for the call.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "attnforge/attention.h"
#include "attnforge/kernel_table.h"
#include "halide_tensor.h"
#include "spec/kernel_arguments.h"

namespace attnforge::runtime {

// The options' own checks: tensors only with a modifier, distinct names, CPU only.
Status check_modifier_options(const AttentionOptions& options, Device device);

// Every tensor `kernel`'s modifier declares is given, with its type and the
// shape a call of these sizes needs; none is given that it does not declare.
Status check_modifier_tensors(const AttentionOptions& options, const KernelEntry& kernel,
                              int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len);

// The checked tensors as `kernel` takes them, in its order, and the key
// ranges of its mask rule for the call; attach() points a call's arguments at them.
// What a ModifierKeyRangeCache holds, for the runtime.
struct ModifierKeyRangeAccess {
  static std::string& key(ModifierKeyRangeCache& c) { return c.key_; }
  static std::vector<int32_t>& ranges(ModifierKeyRangeCache& c) { return c.ranges_; }
  static void count(ModifierKeyRangeCache& c, bool reused) { ++(reused ? c.reused_ : c.computed_); }
};

class ModifierArguments {
 public:
  // Returns a Halide error code (0: fine).
  int prepare(const AttentionOptions& options, const KernelEntry& kernel, int64_t batch,
              int64_t q_len, int64_t kv_len);
  void attach(KernelArguments& args);

 private:
  std::array<HalideTensor, kMaxModifierTensors> tensors_;
  size_t count_ = 0;
  std::vector<int32_t> ranges_;  // the ranges of a call that keeps none
  halide_buffer_t ranges_buffer_{};
  halide_dimension_t ranges_dims_[5]{};
};

}  // namespace attnforge::runtime
