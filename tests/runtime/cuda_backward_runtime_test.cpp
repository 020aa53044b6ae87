// attention_backward() on a CUDA device through the emitted package: the
// package's CUDA backward kernels (the GPU row form) against the double
// reference's gradients, on the reference's forward and on the runtime's own
// CUDA forward (.lse). The tensors live in device memory the Halide runtime
// allocates; where no CUDA device is reachable the tests skip, so the GPU
// check (scripts/gpu-check) runs them where there is one.
#include <HalideRuntimeCuda.h>
#include <gtest/gtest.h>

#include <string>

#include "tensor_views.h"

namespace attnforge::testing {
namespace {

// The specs the test package ships CUDA backward kernels for
// (tests/runtime/CMakeLists.txt); bf16 as its bits.
constexpr const char* kCudaBackwardSpecs[] = {
    "causal.br.kpad.gqa8x2.d64.f32", "causal.br.alibi.mha2.d32.f32", "window.br.kpad.mha2.d32.f16",
    "full.bias.mqa4.d32.bf16", "full.bias.mqa4.d32.f32.dbias"};

constexpr CaseShape kShapes[] = {{1, 1, 1}, {2, 7, 33}, {3, 19, 12}, {1, 70, 131}};

std::string last_halide_error;

// Halide's default handler aborts; without a device, the tests say why and skip.
extern "C" void record_halide_error(void*, const char* message) {
  last_halide_error = message;
}

// `buffer`'s contents in device memory, and `view` pointed at them. False,
// with Halide's error code in `why`, where no device is reachable.
bool to_device(halide_buffer_t* buffer, TensorView& view, std::string* why) {
  halide_set_error_handler(record_halide_error);
  buffer->flags |= halide_buffer_flag_host_dirty;
  int error = halide_device_malloc(nullptr, buffer, halide_cuda_device_interface());
  if (error == 0) error = halide_copy_to_device(nullptr, buffer, halide_cuda_device_interface());
  if (error != 0) {
    *why = "no CUDA device: " + last_halide_error;
    return false;
  }
  view.data = reinterpret_cast<void*>(buffer->device);
  view.device = Device::cuda;
  return true;
}

// What the kernel wrote to `buffer`'s device memory, back on the host.
void from_device(halide_buffer_t* buffer) {
  buffer->flags |= halide_buffer_flag_device_dirty;
  buffer->flags &= ~uint64_t{halide_buffer_flag_host_dirty};
  ASSERT_EQ(halide_copy_to_host(nullptr, buffer), 0);
}

// Every tensor of the backward call on the device.
bool backward_on_device(BackwardArguments& a, BackwardRuntimeCall& call, std::string* why) {
  bool ok = to_device(a.q, call.q, why) && to_device(a.k, call.k, why) &&
            to_device(a.v, call.v, why) && to_device(a.out, call.out, why) &&
            to_device(a.d_out, call.d_out, why) && to_device(a.lse, call.lse, why) &&
            to_device(a.dq, call.dq, why) && to_device(a.dk, call.dk, why) &&
            to_device(a.dv, call.dv, why);
  if (ok && a.key_lengths) ok = to_device(a.key_lengths, call.key_lengths, why);
  if (ok && a.alibi_slopes) ok = to_device(a.alibi_slopes, call.alibi_slopes, why);
  if (ok && a.bias) ok = to_device(a.bias, call.bias, why);
  if (ok && a.d_bias) ok = to_device(a.d_bias, call.d_bias, why);
  return ok;
}

std::string label(const std::string& spec, CaseShape shape) {
  return spec + " B" + std::to_string(shape.batch) + " Lq" + std::to_string(shape.q_len) + " Lk" +
         std::to_string(shape.kv_len);
}

// Runs the case's backward on the device and compares its gradients.
void expect_gradients_match(const AttentionSpec& spec, BackwardCase& c, const std::string& what) {
  BackwardRuntimeCall call(spec, c);
  std::string why;
  if (!backward_on_device(c.arguments(), call, &why)) GTEST_SKIP() << why;
  const Status status = call.run();
  ASSERT_TRUE(status.ok()) << what << ": " << status.message;
  for (halide_buffer_t* gradient :
       {c.arguments().dq, c.arguments().dk, c.arguments().dv, c.arguments().d_bias}) {
    if (gradient) from_device(gradient);
  }
  const Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << what << ": " << result.first_failure;
}

TEST(CudaRuntimeBackward, GradientsMatchTheReference) {
  for (const char* text : kCudaBackwardSpecs) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    for (CaseShape shape : kShapes) {
      for (Layout layout : {Layout::bhld, Layout::blhd}) {
        BackwardCase c(spec, shape, {.layout = layout, .seed = 31});
        expect_gradients_match(spec, c, label(text, shape));
        if (::testing::Test::IsSkipped() || HasFatalFailure()) return;
      }
    }
  }
}

// Training's path on the device: attention() with lse, then attention_backward().
TEST(CudaRuntimeBackward, TheRuntimesCudaForwardFeedsItsBackward) {
  for (const char* text : kCudaBackwardSpecs) {
    const AttentionSpec spec = AttentionSpec::parse(text);
    for (CaseShape shape : kShapes) {
      BackwardCase c(spec, shape, {.seed = 32});
      KernelArguments& forward_args = c.forward_arguments();
      RuntimeCall forward(forward_spec_of(spec), forward_args);
      std::string why;
      bool ok = to_device(forward_args.q, forward.q, &why) &&
                to_device(forward_args.k, forward.k, &why) &&
                to_device(forward_args.v, forward.v, &why) &&
                to_device(forward_args.out, forward.out, &why) &&
                to_device(forward_args.lse, forward.lse, &why);
      if (ok && forward_args.key_lengths) {
        ok = to_device(forward_args.key_lengths, forward.key_lengths, &why);
      }
      if (ok && forward_args.alibi_slopes) {
        ok = to_device(forward_args.alibi_slopes, forward.alibi_slopes, &why);
      }
      if (ok && forward_args.bias) ok = to_device(forward_args.bias, forward.bias, &why);
      if (!ok) GTEST_SKIP() << why;
      const Status ran = forward.run();
      ASSERT_TRUE(ran.ok()) << label(text, shape) << ": " << ran.message;
      from_device(forward_args.out);
      from_device(forward_args.lse);
      c.take_forward_outputs();
      expect_gradients_match(spec, c, label(text, shape) + " after the CUDA forward");
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace attnforge::testing
