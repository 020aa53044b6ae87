// Running one emitted kernel through its argv entry point, for every call
// kind: Halide errors become a Status with the kernel's message instead of
// aborting the process, and kernels allocate through the runtime's memory.
#pragma once

#include "attnforge/attention.h"
#include "attnforge/kernel_table.h"

namespace attnforge::runtime {

// Runs the kernel on `argv`; a Halide error is kernel_failed naming the kernel.
Status run_kernel(const KernelEntry& kernel, void** argv);

// A kernel as KernelChoice describes it.
KernelChoice describe(const KernelEntry& kernel);

}  // namespace attnforge::runtime
