#include "attnforge/mha_layer.h"

#include "cpu_features.h"
#include "halide_tensor.h"
#include "kernel_call.h"
#include "kernel_registry.h"
#include "layer_validation.h"
#include "spec/layer_arguments.h"

namespace attnforge {

namespace {

using runtime::ValidatedLayerCall;

Status prepare(const TensorView& x_q, const TensorView* x_kv, const LayerParameters& parameters,
               const TensorView& out, const LayerOptions& options, ValidatedLayerCall* call,
               const KernelEntry** kernel) {
  Status status = runtime::validate_layer_call(x_q, x_kv, parameters, out, options, call);
  if (!status.ok()) return status;
  *kernel = runtime::choose_layer(*call, runtime::host_cpu_features(), &status);
  return status;
}

Status run_layer(const TensorView& x_q, const TensorView* x_kv, const LayerParameters& p,
                 const TensorView& out, const LayerOptions& options) {
  ValidatedLayerCall call;
  const KernelEntry* kernel = nullptr;
  Status status = prepare(x_q, x_kv, p, out, options, &call, &kernel);
  if (!status.ok() || call.empty) return status;

  // Every tensor is in CPU memory (validated), so wrapping cannot fail.
  const KernelPackage& package = attnforge_kernel_package;
  const AttentionOptions& o = options.attention;
  const int64_t bias_extents[4] = {call.batch, call.spec.attention.heads, call.q_len, call.kv_len};
  runtime::HalideTensor tensors[17];
  int used = 0;
  auto wrap = [&](const TensorView* view, const int64_t* extents = nullptr) -> halide_buffer_t* {
    if (!view) return nullptr;
    runtime::HalideTensor& tensor = tensors[used++];
    tensor.wrap(*view, extents, package);
    return tensor.get();
  };
  LayerArguments args;
  args.x_q = wrap(&x_q);
  args.x_kv = wrap(x_kv);
  args.w_qkv = wrap(p.w_qkv);
  args.b_qkv = wrap(p.b_qkv);
  args.w_q = wrap(p.w_q);
  args.w_k = wrap(p.w_k);
  args.w_v = wrap(p.w_v);
  args.b_q = wrap(p.b_q);
  args.b_k = wrap(p.b_k);
  args.b_v = wrap(p.b_v);
  args.w_o = wrap(p.w_o);
  args.b_o = wrap(p.b_o);
  args.key_lengths = wrap(o.key_lengths);
  args.bias = wrap(o.bias, bias_extents);
  args.alibi_slopes = wrap(o.alibi_slopes);
  args.out = wrap(&out);
  args.weights = wrap(o.weights);
  args.scale = call.scale;
  KernelArgv argv = layer_argv(call.spec, args);
  return runtime::run_kernel(*kernel, argv.data());
}

}  // namespace

Status mha_layer(const TensorView& x, const LayerParameters& parameters, const TensorView& out,
                 const LayerOptions& options) {
  return run_layer(x, nullptr, parameters, out, options);
}

Status mha_layer(const TensorView& x_q, const TensorView& x_kv, const LayerParameters& parameters,
                 const TensorView& out, const LayerOptions& options) {
  return run_layer(x_q, &x_kv, parameters, out, options);
}

Status choose_layer_kernel(const TensorView& x_q, const TensorView* x_kv,
                           const LayerParameters& parameters, const TensorView& out,
                           const LayerOptions& options, KernelChoice* choice) {
  ValidatedLayerCall call;
  const KernelEntry* kernel = nullptr;
  Status status = prepare(x_q, x_kv, parameters, out, options, &call, &kernel);
  if (status.ok() && choice) *choice = runtime::describe(*kernel);
  return status;
}

}  // namespace attnforge
