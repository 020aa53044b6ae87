#include "attnforge/attention.h"

#include <HalideRuntime.h>

#include "call_validation.h"
#include "cpu_features.h"
#include "cuda_driver.h"
#include "halide_tensor.h"
#include "kernel_call.h"
#include "kernel_registry.h"
#include "spec/cuda_register_limit.h"
#include "spec/kernel_arguments.h"

namespace attnforge {

namespace {

using runtime::ValidatedCall;

Status prepare(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
               const AttentionOptions& options, ValidatedCall* call, const KernelEntry** kernel) {
  Status status = runtime::validate_call(q, k, v, out, options, call);
  if (!status.ok()) return status;
  std::string cuda_missing;
  if (call->device == Device::cuda) runtime::cuda_device_available(&cuda_missing);
  *kernel = runtime::choose(*call, runtime::host_cpu_features(), cuda_missing, &status);
  return status;
}

}  // namespace

Status choose_kernel(const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& out, const AttentionOptions& options, KernelChoice* choice) {
  ValidatedCall call;
  const KernelEntry* kernel = nullptr;
  Status status = prepare(q, k, v, out, options, &call, &kernel);
  if (status.ok() && choice) *choice = runtime::describe(*kernel);
  return status;
}

Status attention(const TensorView& q, const TensorView& k, const TensorView& v,
                 const TensorView& out, const AttentionOptions& options) {
  ValidatedCall call;
  const KernelEntry* kernel = nullptr;
  Status status = prepare(q, k, v, out, options, &call, &kernel);
  if (!status.ok() || call.empty) return status;
  if (kernel->cuda) use_screened_cuda_register_limit();

  const KernelPackage& package = attnforge_kernel_package;
  const int64_t heads = q.shape[1];
  const int64_t bias_extents[4] = {call.batch, heads, call.q_len, call.kv_len};
  runtime::HalideTensor tq, tk, tv, tout, tlengths, tpages, tbias, tslopes, tweights;
  KernelArguments args;
  int error = tq.wrap(q, nullptr, package) | tk.wrap(k, nullptr, package) |
              tv.wrap(v, nullptr, package) | tout.wrap(out, nullptr, package);
  args.q = tq.get();
  args.k = tk.get();
  args.v = tv.get();
  args.out = tout.get();
  auto wrap_optional = [&](const TensorView* view, runtime::HalideTensor& tensor,
                           const int64_t* extents) -> halide_buffer_t* {
    if (!view) return nullptr;
    error |= tensor.wrap(*view, extents, package);
    return tensor.get();
  };
  args.key_lengths = wrap_optional(options.key_lengths, tlengths, nullptr);
  args.page_table = wrap_optional(options.page_table, tpages, nullptr);
  args.bias = wrap_optional(options.bias, tbias, bias_extents);
  args.alibi_slopes = wrap_optional(options.alibi_slopes, tslopes, nullptr);
  args.weights = wrap_optional(options.weights, tweights, nullptr);
  if (error != 0) {
    return {ErrorCode::kernel_failed,
            "wrapping CUDA memory failed (Halide error " + std::to_string(error) + ")"};
  }
  args.scale = call.scale;
  KernelArgv argv = kernel_argv(call.spec, args);
  return runtime::run_kernel(*kernel, argv.data());
}

std::vector<KernelChoice> available_kernels() {
  std::vector<KernelChoice> kernels;
  for (const runtime::RegisteredKernel& k : runtime::registered_kernels()) {
    kernels.push_back(runtime::describe(*k.entry));
  }
  for (const runtime::RegisteredLayer& k : runtime::registered_layers()) {
    kernels.push_back(runtime::describe(*k.entry));
  }
  return kernels;
}

void set_num_threads(int threads) {
  halide_set_num_threads(threads < 0 ? 0 : threads);
}

}  // namespace attnforge
