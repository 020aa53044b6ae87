#include "kernel_call.h"

#include <HalideRuntime.h>

#include <mutex>
#include <string>

#include "kernel_support/halide_memory.h"

namespace attnforge::runtime {

namespace {

// Halide's default handler aborts the process; calls report instead.
thread_local std::string kernel_message;
void capture_kernel_error(void*, const char* message) {
  kernel_message = message;
}

}  // namespace

Status run_kernel(const KernelEntry& kernel, void** argv) {
  static std::once_flag once;
  std::call_once(once, [] { halide_set_error_handler(capture_kernel_error); });
  install_kernel_memory();
  kernel_message.clear();
  const int error = kernel.argv(argv);
  if (error != 0) {
    return {ErrorCode::kernel_failed, std::string(kernel.function) + " failed (Halide error " +
                                          std::to_string(error) + "): " + kernel_message};
  }
  return Status::success();
}

KernelChoice describe(const KernelEntry& e) {
  auto size = [](int value) { return value == 0 ? std::string("*") : std::to_string(value); };
  std::string bucket =
      "b" + size(e.bucket_batch) + ".q" + size(e.bucket_q_len) + ".k" + size(e.bucket_kv_len);
  if (bucket == "b*.q*.k*") bucket = e.backward ? "backward" : "generic";
  if (e.bucket_batch == 0 && e.bucket_kv_len == 0 && e.bucket_q_len != 0) {
    bucket = "generic.q" + size(e.bucket_q_len);
  }
  return {e.function, e.spec, e.target, bucket};
}

}  // namespace attnforge::runtime
