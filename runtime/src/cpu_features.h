// The CPU features of this machine, as the kernel table's CpuFeature bits.
#pragma once

#include <cstdint>

namespace attnforge::runtime {

uint32_t host_cpu_features();  // detected once

}  // namespace attnforge::runtime
