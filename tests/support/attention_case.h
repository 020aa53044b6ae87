// One attention problem for tests: random inputs for a spec and shape in a
// chosen memory layout, the kernel arguments that point at them, and a
// comparison of the kernel's outputs with the double-precision reference.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "host_tensor.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"
#include "tests/reference/attention_reference.h"

namespace attnforge::testing {

// (B, H, L, D) contiguous, or (B, L, H, D) as a projection writes it.
enum class Layout { bhld, blhd };
// A HostTensor's memory order for (d, position, head, batch) rows in `layout`.
HostTensor::Extents memory_order_for(Layout layout);

struct CaseShape {
  int batch = 1;
  int q_len = 1;
  int kv_len = 1;
};

struct CaseOptions {
  Layout layout = Layout::bhld;
  uint32_t seed = 1;
  double input_magnitude = 1.0;  // q and k uniform in [-m, m]
  bool broadcast_bias = false;   // bias given as [1, 1, Lq, Lk] with stride-0 B and H
  std::vector<int> key_lengths;  // empty: random, with a zero length where B >= 3
};

// |actual - expected| <= atol + rtol * |expected|, per storage dtype.
struct Tolerance {
  double atol;
  double rtol;
};
Tolerance tolerance_for(DType dtype);

struct Comparison {
  bool ok = true;
  double max_error = 0.0;  // largest |actual - expected|
  std::string first_failure;
};

// Compares element by element; the first failure names `what` and the index.
Comparison compare_values(const std::vector<double>& actual, const std::vector<double>& expected,
                          Tolerance tolerance, const char* what);

// Each row's lse against the reference's: +inf exactly where it is +inf.
Comparison compare_lse(const std::vector<double>& actual, const std::vector<double>& expected,
                       Tolerance tolerance);

class AttentionCase {
 public:
  AttentionCase(const AttentionSpec& spec, CaseShape shape, CaseOptions options = {});

  KernelArguments& arguments() { return args_; }
  const reference::Problem& problem() const { return problem_; }

  // Compares out (and weights and lse when the spec returns them) with the reference.
  Comparison compare() const;
  Comparison compare(Tolerance tolerance) const;

  // Uses `scale` instead of the default 1/sqrt(D).
  void set_scale(double scale);

  // A window given per call (spec.run_time_window): the sizes the kernel and
  // the reference use, kDefaultWindow until set.
  void set_window(int left, int right);
  static constexpr std::pair<int, int> kDefaultWindow = {7, 3};

  // The kernel's output and the reference's, [B][H][Lq][D] in double.
  std::vector<double> output() const;
  std::vector<double> expected_output() const;

  // Sets element d of query row (b, h, i), e.g. to NaN.
  void set_query(int b, int h, int i, int d, double value);

  // Biases the logit of (b, h, i, j) by `value`; needs a per-element bias tensor.
  void set_bias(int b, int h, int i, int j, double value);

  // The next tensor of the spec's modifier, in the order it declares them:
  // `extents` innermost first (1 to 4), value(index) stored at each index.
  void add_modifier_tensor(halide_type_t type, const std::vector<int>& extents,
                           const std::function<double(const HostTensor::Extents&)>& value);
  // The modifier's rules in double, as the reference applies them
  // (reference::Problem::score_mod and mask_mod).
  void set_reference_modifier(std::function<double(double, int, int, int, int)> score_mod,
                              std::function<bool(int, int, int, int)> mask_mod);

 private:
  std::unique_ptr<HostTensor> make_qkv(int heads, int len, Layout layout);
  void page_cache(std::mt19937& rng);
  void quantize_cache();
  static std::vector<double> dequantized(const HostTensor& cache, const HostTensor& scales);

  AttentionSpec spec_;
  CaseShape shape_;
  CaseOptions options_;
  reference::Problem problem_;
  std::unique_ptr<HostTensor> q_, k_, v_, key_lengths_, bias_, slopes_, out_, weights_, lse_;
  std::unique_ptr<HostTensor> k_pages_, v_pages_, page_table_;  // paged specs only
  std::unique_ptr<HostTensor> k_scale_, v_scale_;               // 8-bit caches only
  std::unique_ptr<HostTensor> k_scale_pages_, v_scale_pages_;   // paged 8-bit caches only
  std::vector<std::unique_ptr<HostTensor>> modifier_tensors_;
  KernelArguments args_;
};

}  // namespace attnforge::testing
