#include "kernel_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>

#include "spec/shape_bucket.h"

namespace attnforge::runtime {

namespace {

// The package's attention kernels (Spec = AttentionSpec, RegisteredKernel)
// or layer kernels (LayerSpec, RegisteredLayer).
template <typename Spec, typename Registered>
std::vector<Registered> parse_package(bool backward = false) {
  std::vector<Registered> kernels;
  const KernelPackage& package = attnforge_kernel_package;
  for (int n = 0; n < package.count; ++n) {
    const char* text = package.entries[n].spec;
    if (names_a_layer(text) != std::is_same_v<Spec, LayerSpec>) continue;
    if ((package.entries[n].backward != 0) != backward) continue;
    // The emitter wrote canonical specs; one that does not parse is skipped, not fatal.
    try {
      kernels.push_back({&package.entries[n], Spec::parse(text)});
    } catch (const SpecError&) {
    }
  }
  return kernels;
}

// The specs of `kernels`, sorted and unique, or `none`.
template <typename Registered>
std::string listed_specs(const std::vector<Registered>& kernels, const char* none) {
  std::set<std::string> specs;
  for (const Registered& k : kernels) specs.insert(k.entry->spec);
  std::string text;
  for (const std::string& spec : specs) text += (text.empty() ? "" : ", ") + spec;
  return text.empty() ? none : text;
}

// Higher is better. A kernel whose bucket sizes (0: any) all match the call's
// scores 10 plus the number of sizes it pins down: the call's own tuned bucket
// (13) beats a short-query generic kernel (11), which beats the generic one
// (10). A short-query generic kernel (only its query rows pinned) serves calls
// of up to that many rows, the narrowest first: the one-row kernel (q1) before
// the q16 one. A tuned kernel of another bucket scores below 1, nearer ones
// higher; a partly pinned kernel that does not match is never chosen (-1).
double bucket_score(const KernelEntry& e, int batch, int q_len, int kv_len) {
  if (e.bucket_batch == 0 && e.bucket_kv_len == 0 && e.bucket_q_len != 0) {
    if (q_len > e.bucket_q_len) return -1.0;
    return 11.0 - std::log2(double(e.bucket_q_len) / q_len) / 64.0;
  }
  const int sizes[3] = {e.bucket_batch, e.bucket_q_len, e.bucket_kv_len};
  const int call[3] = {batch, q_len, kv_len};
  int pinned = 0;
  bool matches = true;
  double distance = 0.0;
  for (int n = 0; n < 3; ++n) {
    if (sizes[n] == 0) continue;
    ++pinned;
    matches = matches && sizes[n] == call[n];
    distance += std::abs(std::log2(double(sizes[n]) / call[n]));
  }
  if (matches) return 10.0 + pinned;
  return pinned == 3 ? 1.0 / (1.0 + distance) : -1.0;
}

// The score of a kernel for a call of these sizes, which are put in buckets
// first: higher is better, negative never fits.
double fit_score(const KernelEntry& e, int batch, int q_len, int kv_len) {
  const double fit =
      bucket_score(e, batch_bucket(std::max(batch, 1)), query_bucket(std::max(q_len, 1)),
                   length_bucket(std::max(kv_len, 1)));
  return fit < 0.0 ? -1.0 : fit * 1000.0 + e.rank;
}

// Whether a kernel of spec `kernel` computes what a call of spec `call`
// with modifier `modifier` (a name, or none) needs: the same spec, or
// `call`'s with its window given per call; a modifier of that name, whatever
// its source hash (the package holds one).
bool serves(AttentionSpec kernel, const AttentionSpec& call, const std::string& modifier) {
  if (kernel.modifier != modifier) return false;
  kernel.modifier.clear();
  kernel.modifier_hash.clear();
  if (kernel == call) return true;
  return kernel.run_time_window && call.mask == PositionMask::window &&
         with_window(kernel, call.window_left, call.window_right) == call;
}

}  // namespace

const std::vector<RegisteredKernel>& registered_kernels() {
  static const std::vector<RegisteredKernel> kernels =
      parse_package<AttentionSpec, RegisteredKernel>();
  return kernels;
}

const std::vector<RegisteredKernel>& registered_backward_kernels() {
  static const std::vector<RegisteredKernel> kernels =
      parse_package<AttentionSpec, RegisteredKernel>(true);
  return kernels;
}

const std::vector<RegisteredLayer>& registered_layers() {
  static const std::vector<RegisteredLayer> layers = parse_package<LayerSpec, RegisteredLayer>();
  return layers;
}

const KernelEntry* choose_layer(const ValidatedLayerCall& call, uint32_t cpu_features,
                                Status* status) {
  bool same_spec = false;
  const KernelEntry* best = nullptr;
  double best_score = -1.0;
  for (const RegisteredLayer& k : registered_layers()) {
    if (k.spec != call.spec) continue;
    same_spec = true;
    if (k.entry->cuda || (k.entry->cpu_features & ~cpu_features) != 0) continue;
    const double score = fit_score(*k.entry, call.batch, call.q_len, call.kv_len);
    if (score >= 0.0 && score > best_score) {
      best = k.entry;
      best_score = score;
    }
  }
  if (best) {
    *status = Status::success();
    return best;
  }
  const std::string spec = call.spec.to_string();
  if (same_spec) {
    *status = {ErrorCode::no_kernel,
               fmt::format("every layer kernel for {} needs instructions this CPU lacks", spec)};
    return nullptr;
  }
  *status = {
      ErrorCode::no_kernel,
      fmt::format("no emitted layer kernel computes {} (d_model {}, {} heads, {} kv heads); "
                  "this package has: {}",
                  spec, call.spec.d_model, call.spec.attention.heads, call.spec.attention.kv_heads,
                  listed_specs(registered_layers(), "no layers"))};
  return nullptr;
}

const RegisteredKernel* choose(const ValidatedCall& call, uint32_t cpu_features,
                               const std::string& cuda_missing, Status* status, bool backward) {
  const std::vector<RegisteredKernel>& kernels =
      backward ? registered_backward_kernels() : registered_kernels();
  const bool cuda = call.device == Device::cuda;
  bool same_spec = false, same_device = false;
  int alignment_needed = 0;  // of the kernels the call's rows are too unaligned for
  const RegisteredKernel* best = nullptr;
  double best_score = -1.0;
  // A kernel with the call's window compiled in beats every one taking it per call.
  constexpr double kOwnWindow = 1e9;
  for (const RegisteredKernel& k : kernels) {
    if (!serves(k.spec, call.spec, call.modifier)) continue;
    same_spec = true;
    if ((k.entry->cuda != 0) != cuda) continue;
    same_device = true;
    if (!cuda && (k.entry->cpu_features & ~cpu_features) != 0) continue;
    if (k.entry->input_alignment > call.row_alignment) {
      alignment_needed = std::max(alignment_needed, k.entry->input_alignment);
      continue;
    }
    double score = fit_score(*k.entry, call.batch, call.q_len, call.kv_len);
    if (score >= 0.0 && !k.spec.run_time_window) score += kOwnWindow;
    if (score >= 0.0 && score > best_score) {
      best = &k;
      best_score = score;
    }
  }
  const bool cuda_missing_here = cuda && !cuda_missing.empty();
  if (best && !cuda_missing_here) {
    *status = Status::success();  // the common case formats nothing
    return best;
  }
  std::string spec = call.spec.to_string();
  if (!call.modifier.empty()) spec += " with modifier " + call.modifier;
  if (backward) spec += " backward";
  if (!same_spec) {
    *status = {ErrorCode::no_kernel,
               fmt::format("no emitted kernel computes {} (head dim {}, {} heads, {} kv heads); "
                           "this package has: {}{}",
                           spec, call.spec.head_dim, call.spec.heads, call.spec.kv_heads,
                           listed_specs(kernels, "no kernels"),
                           backward ? " (backward kernels: `attnforge emit --backward`)" : "")};
  } else if (!same_device) {
    *status = {ErrorCode::no_kernel,
               fmt::format("the package has no {} kernel for {}", cuda ? "CUDA" : "CPU", spec)};
  } else if (!best && alignment_needed > 0) {
    *status = {ErrorCode::no_kernel,
               fmt::format("q, k, v: the {} kernels for {} need rows aligned to {} bytes (the "
                           "pointers and the B, H and L strides); these are aligned to {}",
                           cuda ? "CUDA" : "CPU", spec, alignment_needed, call.row_alignment)};
  } else if (!best) {
    *status = {ErrorCode::no_kernel,
               fmt::format("every CPU kernel for {} needs instructions this CPU lacks", spec)};
  } else {
    *status = {ErrorCode::no_device, "q: CUDA tensors given, but " + cuda_missing};
  }
  return nullptr;
}

}  // namespace attnforge::runtime
