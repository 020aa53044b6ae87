// How every CUDA module of the linked kernels loads: with the PTX functions
// linked in (kernel_support/ptx_functions.h) and under the register limit the screens
// assemble with (spec/cuda_register_limit.h). cuda_driver.cpp puts it in
// place of the Halide CUDA runtime's weak compile_kernel.
#pragma once

namespace attnforge::runtime {

// Loads `ptx` (`size` bytes, or up to its first NUL) as a CUDA module in the
// current context; returns the CUmodule, or null after reporting the error
// through halide_error.
void* load_cuda_module(void* user_context, const char* ptx, int size);

}  // namespace attnforge::runtime
