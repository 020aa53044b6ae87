// Whether a CUDA driver and device exist, found as libcuda.so.1 (what a
// driver install always provides) without linking it.
#pragma once

#include <string>

namespace attnforge::runtime {

// Checked once; `why` says what is missing when false.
bool cuda_device_available(std::string* why);

}  // namespace attnforge::runtime
