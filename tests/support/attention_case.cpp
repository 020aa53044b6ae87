#include "attention_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "spec/kv_quantization.h"
#include "tests/reference/kv_quantizers.h"

namespace attnforge::testing {

HostTensor::Extents memory_order_for(Layout layout) {
  // Logical dims are (d, position, head, batch).
  return layout == Layout::bhld ? HostTensor::Extents{0, 1, 2, 3} : HostTensor::Extents{0, 2, 1, 3};
}

namespace {

void fill_uniform(HostTensor& tensor, std::mt19937& rng, double magnitude) {
  std::uniform_real_distribution<double> dist(-magnitude, magnitude);
  auto e = tensor.extents();
  for (int x3 = 0; x3 < e[3]; ++x3)
    for (int x2 = 0; x2 < e[2]; ++x2)
      for (int x1 = 0; x1 < e[1]; ++x1)
        for (int x0 = 0; x0 < e[0]; ++x0) tensor.set({x0, x1, x2, x3}, dist(rng));
}

// Random finite e4m3 codes (no 0x7F or 0xFF).
void fill_e4m3_codes(HostTensor& tensor, std::mt19937& rng) {
  std::uniform_int_distribution<int> codes(0, 253);
  auto e = tensor.extents();
  for (int x3 = 0; x3 < e[3]; ++x3)
    for (int x2 = 0; x2 < e[2]; ++x2)
      for (int x1 = 0; x1 < e[1]; ++x1)
        for (int x0 = 0; x0 < e[0]; ++x0) {
          const int code = codes(rng);
          tensor.set({x0, x1, x2, x3}, code < 0x7F ? code : code + 1);
        }
}

// The indices of every element of KV head h in a (d, position, head, batch) cache.
std::vector<HostTensor::Extents> each_row_element(const HostTensor::Extents& e, int h) {
  std::vector<HostTensor::Extents> indices;
  for (int b = 0; b < e[3]; ++b)
    for (int j = 0; j < e[1]; ++j)
      for (int d = 0; d < e[0]; ++d) indices.push_back({d, j, h, b});
  return indices;
}

}  // namespace

Comparison compare_values(const std::vector<double>& actual, const std::vector<double>& expected,
                          Tolerance tol, const char* what) {
  Comparison c;
  if (actual.size() != expected.size()) {
    c.ok = false;
    c.first_failure =
        fmt::format("{}: {} values, expected {}", what, actual.size(), expected.size());
    return c;
  }
  for (size_t n = 0; n < actual.size(); ++n) {
    double error = std::fabs(actual[n] - expected[n]);
    if (!(error <= tol.atol + tol.rtol * std::fabs(expected[n]))) {  // NaN fails too
      if (c.ok) {
        c.first_failure = fmt::format("{}[{}] = {}, expected {}", what, n, actual[n], expected[n]);
      }
      c.ok = false;
    }
    if (!std::isnan(error)) c.max_error = std::max(c.max_error, error);
  }
  return c;
}

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {1e-4, 1e-4};  // f32 accumulation over up to ~1000 keys
    case DType::f16:
      return {1e-3, 1e-3};  // output rounded to f16 (2^-11 relative)
    case DType::bf16:
      return {4e-3, 4e-3};  // output rounded to bf16 (2^-8 relative)
  }
  return {0, 0};
}

std::unique_ptr<HostTensor> AttentionCase::make_qkv(int heads, int len, Layout layout) {
  return std::make_unique<HostTensor>(halide_type_of(spec_.dtype),
                                      HostTensor::Extents{spec_.head_dim, len, heads, shape_.batch},
                                      memory_order_for(layout));
}

// An 8-bit cache: k_ and v_ become the int8 rows (kv8) or e4m3 codes
// (kvfp8) of their values and k_scale_ and v_scale_ their scales; the
// reference reads the cache dequantized, e4m3 codes by their definition.
void AttentionCase::quantize_cache() {
  const int D = spec_.head_dim;
  const bool e4m3 = spec_.kv_storage == KvStorage::fp8_e4m3;
  std::vector<float> row(D);
  std::vector<int8_t> quantized(D);
  for (auto [cache, scales] : {std::pair{&k_, &k_scale_}, std::pair{&v_, &v_scale_}}) {
    const HostTensor::Extents e = (*cache)->extents();
    auto levels =
        std::make_unique<HostTensor>(halide_type_t(e4m3 ? halide_type_uint : halide_type_int, 8), e,
                                     memory_order_for(options_.layout));
    *scales = std::make_unique<HostTensor>(
        halide_type_t(halide_type_float, 32),
        e4m3 ? HostTensor::Extents{e[2], 1, 1, 1} : HostTensor::Extents{e[1], e[2], e[3], 1});
    if (e4m3) {
      // One scale per KV head: its largest magnitude maps to 448.
      for (int h = 0; h < e[2]; ++h) {
        double largest = 0;
        for (const auto& index : each_row_element(e, h)) {
          largest = std::max(largest, std::fabs((*cache)->get(index)));
        }
        (*scales)->set({h, 0, 0, 0}, largest / kE4m3Largest);
        const float scale = static_cast<float>((*scales)->get({h, 0, 0, 0}));
        for (const auto& index : each_row_element(e, h)) {
          const float value = static_cast<float>((*cache)->get(index));
          levels->set(index, scale > 0 ? e4m3_code(value / scale) : 0);
        }
      }
    } else {
      for (int b = 0; b < e[3]; ++b) {
        for (int h = 0; h < e[2]; ++h) {
          for (int j = 0; j < e[1]; ++j) {
            for (int d = 0; d < D; ++d) row[d] = static_cast<float>((*cache)->get({d, j, h, b}));
            (*scales)->set({j, h, b, 0}, quantize_row(row.data(), D, quantized.data()));
            for (int d = 0; d < D; ++d) levels->set({d, j, h, b}, quantized[d]);
          }
        }
      }
    }
    *cache = std::move(levels);
  }
  problem_.k = dequantized(*k_, *k_scale_);
  problem_.v = dequantized(*v_, *v_scale_);
  args_.k = k_->raw();
  args_.v = v_->raw();
  args_.k_scale = k_scale_->raw();
  args_.v_scale = v_scale_->raw();
  args_.k_scale->dimensions = args_.v_scale->dimensions = e4m3 ? 1 : 3;
}

// [B][H_kv][Lk][D] values of an 8-bit cache, as the kernel computes them.
std::vector<double> AttentionCase::dequantized(const HostTensor& cache, const HostTensor& scales) {
  const HostTensor::Extents e = cache.extents();
  const bool e4m3 = cache.type().code == halide_type_uint;
  std::vector<double> values;
  for (int b = 0; b < e[3]; ++b)
    for (int h = 0; h < e[2]; ++h)
      for (int j = 0; j < e[1]; ++j)
        for (int d = 0; d < e[0]; ++d) {
          const double level = cache.get({d, j, h, b});
          values.push_back(e4m3 ? reference::e4m3_value(static_cast<int>(level)) *
                                      scales.get({h, 0, 0, 0})
                                : dequantize(static_cast<int8_t>(level),
                                             static_cast<float>(scales.get({j, h, b, 0}))));
        }
  return values;
}

// The cache in pages, for the kernel; the reference reads the contiguous
// one. Each sequence's pages sit at shuffled places among one spare page no
// table names. Positions past Lk hold values a kernel must never weigh, and
// table entries past a sequence's length are -1, as serving engines pad them.
void AttentionCase::page_cache(std::mt19937& rng) {
  const int P = spec_.page_size, B = shape_.batch, Lk = shape_.kv_len;
  const int width = std::max((Lk + P - 1) / P, 1), pages = B * width + 1;
  std::vector<int> place(pages);
  std::iota(place.begin(), place.end(), 0);
  std::shuffle(place.begin(), place.end(), rng);
  page_table_ = std::make_unique<HostTensor>(halide_type_t(halide_type_int, 32),
                                             HostTensor::Extents{width, B, 1, 1});
  for (auto [paged, cache, paged_scales, scales] :
       {std::tuple{&k_pages_, k_.get(), &k_scale_pages_, k_scale_.get()},
        std::tuple{&v_pages_, v_.get(), &v_scale_pages_, v_scale_.get()}}) {
    *paged = std::make_unique<HostTensor>(
        cache->raw()->type, HostTensor::Extents{spec_.head_dim, P, spec_.kv_heads, pages},
        memory_order_for(options_.layout));
    if (spec_.kv_storage == KvStorage::fp8_e4m3) {
      fill_e4m3_codes(**paged, rng);
    } else {
      fill_uniform(**paged, rng, spec_.quantized_kv() ? 127.0 : 100.0);
    }
    if (scales && spec_.kv_storage == KvStorage::int8) {
      *paged_scales = std::make_unique<HostTensor>(
          halide_type_t(halide_type_float, 32), HostTensor::Extents{P, spec_.kv_heads, pages, 1});
      fill_uniform(**paged_scales, rng, 100.0);
    }
    for (int b = 0; b < B; ++b) {
      for (int n = 0; n < width; ++n) {
        const int page = place[b * width + n];
        for (int r = 0; r < P && n * P + r < Lk; ++r) {
          for (int h = 0; h < spec_.kv_heads; ++h) {
            for (int d = 0; d < spec_.head_dim; ++d) {
              (*paged)->set({d, r, h, page}, cache->get({d, n * P + r, h, b}));
            }
            if (*paged_scales)
              (*paged_scales)->set({r, h, page, 0}, scales->get({n * P + r, h, b, 0}));
          }
        }
      }
    }
  }
  for (int b = 0; b < B; ++b) {
    for (int n = 0; n < width; ++n) {
      const bool used = n * P < problem_.key_lengths[b];
      page_table_->set({n, b, 0, 0}, used ? place[b * width + n] : -1);
    }
  }
  args_.k = k_pages_->raw();
  args_.v = v_pages_->raw();
  if (spec_.kv_storage == KvStorage::int8) {
    args_.k_scale = k_scale_pages_->raw();
    args_.v_scale = v_scale_pages_->raw();
    args_.k_scale->dimensions = args_.v_scale->dimensions = 3;
  }
  args_.page_table = page_table_->raw();
  args_.page_table->dimensions = 2;
}

AttentionCase::AttentionCase(const AttentionSpec& spec, CaseShape shape, CaseOptions options)
    : spec_(spec), shape_(shape), options_(options) {
  spec_.validate();
  std::mt19937 rng(options.seed);
  const int B = shape.batch, H = spec.heads, Lq = shape.q_len, Lk = shape.kv_len;

  q_ = make_qkv(H, Lq, options.layout);
  k_ = make_qkv(spec.kv_heads, Lk, options.layout);
  v_ = make_qkv(spec.kv_heads, Lk, options.layout);
  out_ = make_qkv(H, Lq, options.layout);
  fill_uniform(*q_, rng, options.input_magnitude);
  fill_uniform(*k_, rng, options.input_magnitude);
  fill_uniform(*v_, rng, 1.0);

  problem_.spec = spec;
  problem_.batch = B;
  problem_.q_len = Lq;
  problem_.kv_len = Lk;
  problem_.scale = default_scale(spec.head_dim);
  problem_.q = q_->values();
  problem_.k = k_->values();
  problem_.v = v_->values();
  args_.q = q_->raw();
  args_.k = k_->raw();
  args_.v = v_->raw();
  args_.out = out_->raw();
  args_.scale = static_cast<float>(problem_.scale);
  if (spec.run_time_window) set_window(kDefaultWindow.first, kDefaultWindow.second);

  if (spec.key_padding) {
    std::vector<int> lengths = options.key_lengths;
    if (lengths.empty()) {
      std::uniform_int_distribution<int> dist(1, Lk);
      for (int b = 0; b < B; ++b) lengths.push_back(b == 2 ? 0 : dist(rng));
    }
    if (static_cast<int>(lengths.size()) != B) throw std::invalid_argument("key_lengths size");
    key_lengths_ = std::make_unique<HostTensor>(halide_type_t(halide_type_int, 32),
                                                HostTensor::Extents{B, 1, 1, 1});
    for (int b = 0; b < B; ++b) key_lengths_->set({b, 0, 0, 0}, lengths[b]);
    problem_.key_lengths = lengths;
    args_.key_lengths = key_lengths_->raw();
    args_.key_lengths->dimensions = 1;
  }
  if (spec.quantized_kv()) quantize_cache();
  if (spec.paged()) page_cache(rng);
  if (spec.bias == BiasKind::tensor) {
    int bias_heads = options.broadcast_bias ? 1 : H;
    int bias_batch = options.broadcast_bias ? 1 : B;
    bias_ = std::make_unique<HostTensor>(halide_type_of(spec.dtype),
                                         HostTensor::Extents{Lk, Lq, bias_heads, bias_batch});
    fill_uniform(*bias_, rng, 2.0);
    problem_.bias = bias_->values();
    problem_.bias_heads = bias_heads;
    problem_.bias_batch = bias_batch;
    if (options.broadcast_bias) {
      bias_->broadcast(2, H);
      bias_->broadcast(3, B);
    }
    args_.bias = bias_->raw();
  }
  if (spec.bias == BiasKind::alibi) {
    slopes_ = std::make_unique<HostTensor>(halide_type_t(halide_type_float, 32),
                                           HostTensor::Extents{H, 1, 1, 1});
    for (int h = 0; h < H; ++h) {
      problem_.alibi_slopes.push_back(slopes_->set({h, 0, 0, 0}, std::exp2(-8.0 * (h + 1) / H)));
    }
    args_.alibi_slopes = slopes_->raw();
    args_.alibi_slopes->dimensions = 1;
  }
  if (spec.return_weights) {
    weights_ =
        std::make_unique<HostTensor>(halide_type_of(spec.dtype), HostTensor::Extents{Lk, Lq, H, B});
    args_.weights = weights_->raw();
  }
  if (spec.return_lse) {
    lse_ = std::make_unique<HostTensor>(halide_type_t(halide_type_float, 32),
                                        HostTensor::Extents{Lq, H, B, 1});
    args_.lse = lse_->raw();
    args_.lse->dimensions = 3;
  }
}

void AttentionCase::set_bias(int b, int h, int i, int j, double value) {
  if (!bias_ || options_.broadcast_bias) throw std::logic_error("set_bias needs a full bias");
  double stored = bias_->set({j, i, h, b}, value);
  problem_
      .bias[((static_cast<size_t>(b) * spec_.heads + h) * shape_.q_len + i) * shape_.kv_len + j] =
      stored;
}

std::vector<double> AttentionCase::output() const {
  return out_->values();
}

std::vector<double> AttentionCase::expected_output() const {
  return reference::attention(problem_).out;
}

void AttentionCase::set_query(int b, int h, int i, int d, double value) {
  double stored = q_->set({d, i, h, b}, value);
  problem_.q[((static_cast<size_t>(b) * spec_.heads + h) * shape_.q_len + i) * spec_.head_dim + d] =
      stored;
}

void AttentionCase::set_scale(double scale) {
  args_.scale = static_cast<float>(scale);
  problem_.scale = static_cast<double>(args_.scale);
}

void AttentionCase::add_modifier_tensor(
    halide_type_t type, const std::vector<int>& extents,
    const std::function<double(const HostTensor::Extents&)>& value) {
  if (extents.empty() || extents.size() > 4 || modifier_tensors_.size() >= kMaxModifierTensors) {
    throw std::invalid_argument("add_modifier_tensor: 1 to 4 extents, at most 4 tensors");
  }
  HostTensor::Extents full = {1, 1, 1, 1};
  std::copy(extents.begin(), extents.end(), full.begin());
  auto tensor = std::make_unique<HostTensor>(type, full);
  for (int a = 0; a < full[3]; ++a) {
    for (int z = 0; z < full[2]; ++z) {
      for (int y = 0; y < full[1]; ++y) {
        for (int x = 0; x < full[0]; ++x) tensor->set({x, y, z, a}, value({x, y, z, a}));
      }
    }
  }
  tensor->raw()->dimensions = static_cast<int>(extents.size());
  args_.modifier_tensors[modifier_tensors_.size()] = tensor->raw();
  modifier_tensors_.push_back(std::move(tensor));
  args_.modifier_tensor_count = modifier_tensors_.size();
}

void AttentionCase::set_reference_modifier(
    std::function<double(double, int, int, int, int)> score_mod,
    std::function<bool(int, int, int, int)> mask_mod) {
  problem_.score_mod = std::move(score_mod);
  problem_.mask_mod = std::move(mask_mod);
}

void AttentionCase::set_window(int left, int right) {
  args_.window_left = problem_.window_left = left;
  args_.window_right = problem_.window_right = right;
}

Comparison AttentionCase::compare() const {
  return compare(tolerance_for(spec_.dtype));
}

Comparison AttentionCase::compare(Tolerance tolerance) const {
  reference::Result expected = reference::attention(problem_);
  Comparison result = compare_values(out_->values(), expected.out, tolerance, "out");
  if (weights_) {
    Comparison w = compare_values(weights_->values(), expected.weights, tolerance, "weights");
    result.max_error = std::max(result.max_error, w.max_error);
    if (result.ok && !w.ok) result.first_failure = w.first_failure;
    result.ok = result.ok && w.ok;
  }
  if (lse_) {
    const Comparison l = compare_lse(lse_->values(), expected.lse, tolerance);
    result.max_error = std::max(result.max_error, l.max_error);
    if (result.ok && !l.ok) result.first_failure = l.first_failure;
    result.ok = result.ok && l.ok;
  }
  return result;
}

Comparison compare_lse(const std::vector<double>& actual, const std::vector<double>& expected,
                       Tolerance tolerance) {
  // Rows that see no key are +inf exactly; the others compare as values.
  std::vector<double> finite_actual = actual, finite_expected = expected;
  std::string wrong_infinity;
  for (size_t n = 0; n < expected.size() && n < actual.size(); ++n) {
    if (!std::isinf(expected[n]) && !std::isinf(actual[n])) continue;
    if (actual[n] != expected[n] && wrong_infinity.empty()) {
      wrong_infinity = fmt::format("lse[{}] = {}, expected {}", n, actual[n], expected[n]);
    }
    finite_actual[n] = finite_expected[n] = 0.0;
  }
  Comparison c = compare_values(finite_actual, finite_expected, tolerance, "lse");
  if (!wrong_infinity.empty()) {
    c.ok = false;
    c.first_failure = wrong_infinity;
  }
  return c;
}

}  // namespace attnforge::testing
