#include "cuda_register_limit.h"

#include <cstdlib>
#include <mutex>
#include <string>

namespace attnforge {

void use_screened_cuda_register_limit() {
  static std::once_flag once;
  std::call_once(once, [] {
    setenv(kCudaRegisterLimitVariable, std::to_string(kCudaRegisterLimit).c_str(), 1);
  });
}

}  // namespace attnforge
