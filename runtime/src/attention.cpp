#include "attnforge/attention.h"

#include <HalideRuntime.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "call_validation.h"
#include "cpu_features.h"
#include "cuda_driver.h"
#include "halide_tensor.h"
#include "kernel_call.h"
#include "kernel_registry.h"
#include "modifier_call.h"
#include "packed_staging.h"
#include "spec/cuda_register_limit.h"
#include "spec/kernel_arguments.h"

namespace attnforge {

namespace {

using runtime::ValidatedCall;

Status prepare(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
               const AttentionOptions& options, ValidatedCall* call, const KernelEntry** kernel) {
  Status status = runtime::validate_call(q, k, v, out, options, call);
  if (!status.ok()) return status;
  status = runtime::check_modifier_options(options, call->device);
  if (!status.ok()) return status;
  std::string cuda_missing;
  if (call->device == Device::cuda) runtime::cuda_device_available(&cuda_missing);
  const runtime::RegisteredKernel* chosen =
      runtime::choose(*call, runtime::host_cpu_features(), cuda_missing, &status);
  if (!chosen) return status;
  if (!options.modifier.empty()) {
    status = runtime::check_modifier_tensors(options, *chosen->entry, call->batch, q.shape[1],
                                             call->q_len, call->kv_len);
    if (!status.ok()) return status;
  }
  *kernel = chosen->entry;
  call->spec = chosen->spec;  // its arguments: a window per call takes the sizes
  return status;
}

bool is_packed(const AttentionOptions& options) {
  return options.cu_seqlens_q || options.cu_seqlens_k;
}

// Rows [start, start + length) along L of a [B, H, L, D] view.
TensorView rows(const TensorView& t, int64_t start, int64_t length) {
  TensorView part = t;
  part.data = static_cast<char*>(t.data) + start * t.strides[2] * element_bytes(t.type);
  part.shape[2] = length;
  return part;
}

struct Sequence {
  TensorView q, k, v, out;
};

// The sequences of a validated packed call, as views of its memory.
std::vector<Sequence> packed_sequences(const TensorView& q, const TensorView& k,
                                       const TensorView& v, const TensorView& out,
                                       const AttentionOptions& options) {
  const auto* q_at = static_cast<const int32_t*>(options.cu_seqlens_q->data);
  const auto* k_at = static_cast<const int32_t*>(options.cu_seqlens_k->data);
  const int64_t qs = options.cu_seqlens_q->strides[0], ks = options.cu_seqlens_k->strides[0];
  std::vector<Sequence> sequences;
  for (int64_t s = 0; s + 1 < options.cu_seqlens_q->shape[0]; ++s) {
    const int64_t q_start = q_at[s * qs], q_len = q_at[(s + 1) * qs] - q_start;
    const int64_t k_start = k_at[s * ks], k_len = k_at[(s + 1) * ks] - k_start;
    sequences.push_back({rows(q, q_start, q_len), rows(k, k_start, k_len), rows(v, k_start, k_len),
                         rows(out, q_start, q_len)});
  }
  return sequences;
}

AttentionOptions one_sequence(const AttentionOptions& options) {
  AttentionOptions each = options;
  each.cu_seqlens_q = nullptr;
  each.cu_seqlens_k = nullptr;
  return each;
}

Status in_sequence(size_t s, Status status) {
  if (!status.ok()) status.message = "sequence " + std::to_string(s) + ": " + status.message;
  return status;
}

// Runs the kernel `prepare` chose for a validated call.
Status run(const ValidatedCall& call, const KernelEntry* kernel, const TensorView& q,
           const TensorView& k, const TensorView& v, const TensorView& out,
           const AttentionOptions& options) {
  if (call.empty) return Status::success();
  if (kernel->cuda) use_screened_cuda_register_limit();

  const KernelPackage& package = attnforge_kernel_package;
  const int64_t heads = q.shape[1];
  const int64_t bias_extents[4] = {call.batch, heads, call.q_len, call.kv_len};
  runtime::HalideTensor tq, tk, tv, tout, tk_scale, tv_scale, tlengths, tpages, tbias, tslopes,
      tweights, tlse;
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
  args.k_scale = wrap_optional(options.k_scale, tk_scale, nullptr);
  args.v_scale = wrap_optional(options.v_scale, tv_scale, nullptr);
  args.key_lengths = wrap_optional(options.key_lengths, tlengths, nullptr);
  args.page_table = wrap_optional(options.page_table, tpages, nullptr);
  args.bias = wrap_optional(options.bias, tbias, bias_extents);
  args.alibi_slopes = wrap_optional(options.alibi_slopes, tslopes, nullptr);
  args.weights = wrap_optional(options.weights, tweights, nullptr);
  args.lse = wrap_optional(options.lse, tlse, nullptr);
  runtime::ModifierArguments modifier;
  if (!options.modifier.empty()) {
    if (int failed = modifier.prepare(options, *kernel, call.batch, call.q_len, call.kv_len)) {
      return {ErrorCode::kernel_failed,
              fmt::format("modifier '{}': its key ranges failed (Halide error {})",
                          options.modifier, failed)};
    }
    modifier.attach(args);
  }
  if (error != 0) {
    return {ErrorCode::kernel_failed,
            "wrapping CUDA memory failed (Halide error " + std::to_string(error) + ")"};
  }
  args.scale = call.scale;
  args.window_left = options.window_left;
  args.window_right = options.window_right;
  KernelArgv argv = kernel_argv(call.spec, args);
  return runtime::run_kernel(*kernel, argv.data());
}

// Validates the packed call, then every sequence and its kernel before any
// runs (so an error writes nothing), then runs them in turn.
Status attention_packed(const TensorView& q, const TensorView& k, const TensorView& v,
                        const TensorView& out, const AttentionOptions& options) {
  ValidatedCall call;
  Status status = runtime::validate_call(q, k, v, out, options, &call);
  if (!status.ok()) return status;
  const AttentionOptions each = one_sequence(options);
  const std::vector<Sequence> sequences = packed_sequences(q, k, v, out, options);
  std::vector<ValidatedCall> calls(sequences.size());
  std::vector<const KernelEntry*> kernels(sequences.size(), nullptr);
  for (size_t s = 0; s < sequences.size(); ++s) {
    const Sequence& x = sequences[s];
    if (x.q.shape[2] == 0) continue;  // no queries: nothing to compute, keys or not
    status = prepare(x.q, x.k, x.v, x.out, each, &calls[s], &kernels[s]);
    if (!status.ok()) return in_sequence(s, status);
  }
  for (size_t s = 0; s < sequences.size(); ++s) {
    const Sequence& x = sequences[s];
    if (!kernels[s]) continue;
    const runtime::StagedKeysAndValues staged(x.q, x.k, x.v);
    status = run(calls[s], kernels[s], x.q, staged.k, staged.v, x.out, each);
    if (!status.ok()) return in_sequence(s, status);
  }
  return Status::success();
}

}  // namespace

Status choose_kernel(const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& out, const AttentionOptions& options, KernelChoice* choice) {
  ValidatedCall call;
  const KernelEntry* kernel = nullptr;
  if (is_packed(options)) {  // the kernel of the sequence with the most queries
    Status status = runtime::validate_call(q, k, v, out, options, &call);
    if (!status.ok()) return status;
    std::vector<Sequence> sequences = packed_sequences(q, k, v, out, options);
    const Sequence* longest = &sequences.front();
    for (const Sequence& x : sequences) {
      if (x.q.shape[2] > longest->q.shape[2]) longest = &x;
    }
    return choose_kernel(longest->q, longest->k, longest->v, longest->out, one_sequence(options),
                         choice);
  }
  Status status = prepare(q, k, v, out, options, &call, &kernel);
  if (status.ok() && choice) *choice = runtime::describe(*kernel);
  return status;
}

Status attention(const TensorView& q, const TensorView& k, const TensorView& v,
                 const TensorView& out, const AttentionOptions& options) {
  if (is_packed(options)) return attention_packed(q, k, v, out, options);
  ValidatedCall call;
  const KernelEntry* kernel = nullptr;
  Status status = prepare(q, k, v, out, options, &call, &kernel);
  if (!status.ok()) return status;
  return run(call, kernel, q, k, v, out, options);
}

std::vector<KernelChoice> available_kernels() {
  std::vector<KernelChoice> kernels;
  for (const runtime::RegisteredKernel& k : runtime::registered_kernels()) {
    kernels.push_back(runtime::describe(*k.entry));
  }
  for (const runtime::RegisteredKernel& k : runtime::registered_backward_kernels()) {
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
