// Compiles the attention Generator in-process (JIT) for one spec, schedule and
// target, and runs it with the same arguments an AOT kernel takes.
#pragma once

#include <Halide.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "jit_compile.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge {

class JitAttention {
 public:
  // extra_params: further GeneratorParams (e.g. schedule) by name. With an
  // autoscheduler (its plugin loaded), pass schedule=auto.
  JitAttention(const AttentionSpec& spec, const Halide::Target& target,
               const std::map<std::string, std::string>& extra_params = {},
               const Halide::AutoschedulerParams& autoscheduler = {});

  // Runs the kernel; a Halide error (e.g. a shape mismatch) throws KernelError.
  // A spec whose modifier has a mask rule computes the rule's key ranges
  // first, unless args.modifier_key_ranges holds them (from key_ranges).
  void run(KernelArguments& args) const;

  // The key ranges of the mask rule for args' shape and modifier tensors
  // (algorithm/modifier_key_ranges.h): computed once, they serve every call
  // with that shape and those tensors' values, as args.modifier_key_ranges.
  // Throws SpecError when the spec's modifier has no mask rule.
  Halide::Runtime::Buffer<int32_t> key_ranges(const KernelArguments& args) const;
  // A table for args' shape by which every row sees every key: no block is
  // skipped, the rule decides each key (what skipping saves is measured against it).
  Halide::Runtime::Buffer<int32_t> key_ranges_of_every_key(const KernelArguments& args) const;

  const AttentionSpec& spec() const { return spec_; }

  // Threads of the JIT runtime's pool, shared by every JIT kernel (0: one per core).
  static void set_num_threads(int threads);

 private:
  AttentionSpec spec_;
  bool cuda_ = false;  // the kernel takes bf16 as its bits (KernelStorageTypes)
  // An empty table for args' shape, and the key length args read.
  Halide::Runtime::Buffer<int32_t> key_range_table(const KernelArguments& args,
                                                   int32_t& kv_len) const;

  Halide::Callable callable_;
  std::optional<Halide::Callable> key_ranges_;  // a mask rule's table, on the CPU
};

}  // namespace attnforge
