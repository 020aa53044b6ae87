// attention_backward(): validates the call, picks the spec's backward kernel
// and runs it.
#include <fmt/format.h>

#include "attnforge/attention.h"
#include "backward_validation.h"
#include "cpu_features.h"
#include "cuda_driver.h"
#include "halide_tensor.h"
#include "kernel_call.h"
#include "kernel_registry.h"
#include "spec/backward_arguments.h"

namespace attnforge {

Status attention_backward(const TensorView& q, const TensorView& k, const TensorView& v,
                          const TensorView& out, const TensorView& d_out, const TensorView& lse,
                          const TensorView& dq, const TensorView& dk, const TensorView& dv,
                          const AttentionOptions& options, const TensorView* d_bias) {
  runtime::ValidatedCall call;
  Status status = runtime::validate_backward_call({q, k, v, out, d_out, lse, dq, dk, dv, d_bias},
                                                  options, &call);
  if (!status.ok()) return status;
  std::string cuda_missing;
  if (call.device == Device::cuda) runtime::cuda_device_available(&cuda_missing);
  const runtime::RegisteredKernel* chosen =
      runtime::choose(call, runtime::host_cpu_features(), cuda_missing, &status, true);
  if (!chosen) return status;
  if (call.empty) return Status::success();

  const KernelPackage& package = attnforge_kernel_package;
  runtime::HalideTensor tq, tk, tv, tout, td_out, tlse, tlengths, tbias, tslopes, tdq, tdk, tdv,
      td_bias;
  BackwardArguments args;
  const int64_t bias_extents[4] = {call.batch, q.shape[1], call.q_len, call.kv_len};
  int error = 0;
  auto wrap = [&](const TensorView* view, runtime::HalideTensor& tensor,
                  const int64_t* extents = nullptr) -> halide_buffer_t* {
    if (!view) return nullptr;
    error |= tensor.wrap(*view, extents, package);
    return tensor.get();
  };
  args.q = wrap(&q, tq);
  args.k = wrap(&k, tk);
  args.v = wrap(&v, tv);
  args.out = wrap(&out, tout);
  args.d_out = wrap(&d_out, td_out);
  args.lse = wrap(&lse, tlse);
  args.key_lengths = wrap(options.key_lengths, tlengths);
  args.bias = wrap(options.bias, tbias, bias_extents);
  args.alibi_slopes = wrap(options.alibi_slopes, tslopes);
  args.dq = wrap(&dq, tdq);
  args.dk = wrap(&dk, tdk);
  args.dv = wrap(&dv, tdv);
  args.d_bias = wrap(d_bias, td_bias);
  if (error != 0) {
    return {ErrorCode::kernel_failed,
            fmt::format("wrapping a tensor failed (Halide error {})", error)};
  }
  args.scale = call.scale;
  args.window_left = options.window_left;
  args.window_right = options.window_right;
  KernelArgv argv = backward_argv(chosen->spec, args);
  return runtime::run_kernel(*chosen->entry, argv.data());
}

}  // namespace attnforge
