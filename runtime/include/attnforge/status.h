// Errors across the runtime's API: a code and a message naming the argument,
// what was expected and what was given. Calls never throw and never abort.
#pragma once

#include <string>

namespace attnforge {

enum class ErrorCode {
  ok,
  invalid_argument,  // a tensor, option or size does not fit the call
  no_kernel,         // no emitted kernel computes this spec on this device and CPU
  no_device,         // CUDA tensors, but no CUDA driver or device
  kernel_failed,     // the kernel itself reported an error
};

const char* to_string(ErrorCode code);

struct Status {
  ErrorCode code = ErrorCode::ok;
  std::string message;

  bool ok() const { return code == ErrorCode::ok; }
  static Status success() { return {}; }
};

}  // namespace attnforge
