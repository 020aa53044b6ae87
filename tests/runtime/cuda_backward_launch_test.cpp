// attention_backward() with CUDA tensors, through the stand-in driver of one
// device (runs nothing): the call takes the package's CUDA backward kernel
// and launches its kernels, bf16 and dBias included; a gradient on another
// device is a named error.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/runtime/stand_in_cuda.h"

namespace attnforge {
namespace {

std::vector<std::string> launched_kernels() {
  void* driver = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
  auto read = driver
                  ? reinterpret_cast<const char* (*)()>(dlsym(driver, "stand_in_launched_kernels"))
                  : nullptr;
  std::vector<std::string> names;
  if (!read) return names;
  std::istringstream lines(read());
  for (std::string line; std::getline(lines, line);) names.push_back(line);
  return names;
}

// A causal ALiBi call (causal.br.alibi.mha2.d32.f32) at device addresses.
struct AlibiCall {
  TensorView q = on_device(0x10000000, {1, 2, 40, 32});
  TensorView k = on_device(0x11000000, {1, 2, 70, 32});
  TensorView v = on_device(0x12000000, {1, 2, 70, 32});
  TensorView out = on_device(0x13000000, {1, 2, 40, 32});
  TensorView d_out = on_device(0x14000000, {1, 2, 40, 32});
  TensorView lse = on_device(0x15000000, {1, 2, 40});
  TensorView dq = on_device(0x16000000, {1, 2, 40, 32});
  TensorView dk = on_device(0x17000000, {1, 2, 70, 32});
  TensorView dv = on_device(0x18000000, {1, 2, 70, 32});
  TensorView slopes = on_device(0x19000000, {2});
  AttentionOptions options;

  AlibiCall() {
    options.mask = MaskKind::causal;
    options.alignment = MaskAlignment::bottom_right;
    options.alibi_slopes = &slopes;
  }
  Status run() { return attention_backward(q, k, v, out, d_out, lse, dq, dk, dv, options); }
};

TEST(CudaBackwardLaunch, TheCallLaunchesEachGradientsKernelOnce) {
  const size_t before = launched_kernels().size();
  AlibiCall call;
  const Status status = call.run();
  ASSERT_TRUE(status.ok()) << status.message;
  const std::vector<std::string> all = launched_kernels();
  const std::multiset<std::string> names(all.begin() + before, all.end());
  std::string listed;
  for (const std::string& name : names) listed += name + " ";
  for (const char* gradient : {"_kernel_dq_s0", "_kernel_dk_s0", "_kernel_dv_s0"}) {
    const auto writes = std::count_if(names.begin(), names.end(), [&](const std::string& name) {
      return name.rfind(gradient, 0) == 0;
    });
    EXPECT_EQ(writes, 1) << gradient << " in: " << listed;
  }
  for (const std::string& name : names) EXPECT_EQ(names.count(name), 1u) << name;
}

// bf16 runs the same row form, its tensors passed as their bits.
TEST(CudaBackwardLaunch, Bf16TakesItsCudaKernel) {
  auto bf16 = [](uintptr_t address, std::initializer_list<int64_t> shape) {
    return TensorView::contiguous(reinterpret_cast<void*>(address), ElementType::bf16, shape,
                                  Device::cuda);
  };
  TensorView q = bf16(0x10000000, {1, 4, 8, 32}), k = bf16(0x11000000, {1, 1, 8, 32}),
             v = bf16(0x12000000, {1, 1, 8, 32}), out = bf16(0x13000000, {1, 4, 8, 32}),
             d_out = bf16(0x14000000, {1, 4, 8, 32}), dq = bf16(0x15000000, {1, 4, 8, 32}),
             dk = bf16(0x16000000, {1, 1, 8, 32}), dv = bf16(0x17000000, {1, 1, 8, 32});
  TensorView bias = bf16(0x30000000, {1, 4, 8, 8});
  TensorView lse = on_device(0x40000000, {1, 4, 8});
  AttentionOptions options;
  options.bias = &bias;
  const size_t before = launched_kernels().size();
  const Status status = attention_backward(q, k, v, out, d_out, lse, dq, dk, dv, options);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_GT(launched_kernels().size(), before);
}

// dBias: the .dbias kernel, with its bias-gradient kernel launched too.
TEST(CudaBackwardLaunch, ABiasGradientTakesTheDbiasKernel) {
  TensorView q = on_device(0x10000000, {1, 4, 8, 32}), k = on_device(0x11000000, {1, 1, 8, 32}),
             v = on_device(0x12000000, {1, 1, 8, 32}), out = on_device(0x13000000, {1, 4, 8, 32}),
             d_out = on_device(0x14000000, {1, 4, 8, 32});
  TensorView bias = on_device(0x30000000, {1, 4, 8, 8});
  TensorView lse = on_device(0x40000000, {1, 4, 8});
  TensorView dq = on_device(0x50000000, {1, 4, 8, 32});
  TensorView dk = on_device(0x51000000, {1, 1, 8, 32}), dv = on_device(0x52000000, {1, 1, 8, 32});
  TensorView d_bias = on_device(0x53000000, {1, 4, 8, 8});
  AttentionOptions options;
  options.bias = &bias;
  const size_t before = launched_kernels().size();
  const Status status = attention_backward(q, k, v, out, d_out, lse, dq, dk, dv, options, &d_bias);
  ASSERT_TRUE(status.ok()) << status.message;
  const std::vector<std::string> all = launched_kernels();
  EXPECT_EQ(std::count_if(
                all.begin() + before, all.end(),
                [](const std::string& name) { return name.rfind("_kernel_d_bias_s0", 0) == 0; }),
            1);
}

TEST(CudaBackwardLaunch, AGradientOnAnotherDeviceIsNamed) {
  AlibiCall call;
  std::vector<float> host(1 * 2 * 70 * 32);
  call.dk = TensorView::contiguous(host.data(), ElementType::f32, {1, 2, 70, 32});
  const Status status = call.run();
  EXPECT_EQ(status.code, ErrorCode::invalid_argument);
  EXPECT_EQ(status.message.rfind("dk:", 0), 0u) << status.message;
}

}  // namespace
}  // namespace attnforge
