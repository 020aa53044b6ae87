// The attnforge Python extension (_attnforge): the runtime's calls on any
// DLPack or buffer-protocol array (numpy, PyTorch CPU or CUDA tensors),
// without a copy. Arrays become TensorViews of the same memory with their
// own shape and strides; the GIL is released while a kernel runs. A call
// returns its Status as (code, message); the attnforge package turns that
// into an exception.
#include <attnforge/attention.h>
#include <attnforge/kv_cache.h>
#include <attnforge/mha_layer.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace {

using attnforge::ElementType;
using attnforge::Status;
using attnforge::TensorView;
using Array = nb::ndarray<>;  // any element type, shape, strides and device
using Optional = std::optional<Array>;
using Result = std::pair<std::string, std::string>;  // the Status: code name, message

ElementType element_type(const Array& a, const char* name) {
  const nb::dlpack::dtype t = a.dtype();
  using Code = nb::dlpack::dtype_code;
  if (t.lanes == 1 && t.code == uint8_t(Code::Float) && t.bits == 32) return ElementType::f32;
  if (t.lanes == 1 && t.code == uint8_t(Code::Float) && t.bits == 16) return ElementType::f16;
  if (t.lanes == 1 && t.code == uint8_t(Code::Bfloat) && t.bits == 16) return ElementType::bf16;
  if (t.lanes == 1 && t.code == uint8_t(Code::Int) && t.bits == 32) return ElementType::i32;
  if (t.lanes == 1 && t.code == uint8_t(Code::Int) && t.bits == 8) return ElementType::i8;
  // fp8 e4m3 codes travel as their bytes (torch: t.view(torch.uint8)).
  if (t.lanes == 1 && t.code == uint8_t(Code::UInt) && t.bits == 8) return ElementType::f8e4m3;
  throw nb::value_error((std::string(name) + ": element type code " + std::to_string(t.code) +
                         ", " + std::to_string(t.bits) +
                         " bits; expected float32, float16 or bfloat16 (int32 for lengths and "
                         "page tables, int8 or uint8 fp8 e4m3 codes for an 8-bit KV cache)")
                            .c_str());
}

// The view of an array's memory; the array must outlive it.
TensorView view(const Array& a, const char* name) {
  if (a.ndim() > TensorView::kMaxRank) {
    throw nb::value_error(
        (std::string(name) + ": rank " + std::to_string(a.ndim()) + "; expected at most 4")
            .c_str());
  }
  TensorView v;
  v.data = a.data();
  v.type = element_type(a, name);
  v.rank = static_cast<int>(a.ndim());
  for (int n = 0; n < v.rank; ++n) {
    v.shape[n] = static_cast<int64_t>(a.shape(n));
    v.strides[n] = a.stride(n);
  }
  if (a.device_type() == nb::device::cpu::value) {
    v.device = attnforge::Device::cpu;
  } else if (a.device_type() == nb::device::cuda::value) {
    v.device = attnforge::Device::cuda;
  } else {
    throw nb::value_error((std::string(name) + ": DLPack device type " +
                           std::to_string(a.device_type()) + "; expected the CPU or CUDA")
                              .c_str());
  }
  return v;
}

// The view of an optional array, kept in `storage`; null when absent.
const TensorView* view(const Optional& a, const char* name, TensorView& storage) {
  if (!a) return nullptr;
  storage = view(*a, name);
  return &storage;
}

// The options attention() and mha_layer() share.
struct MaskArguments {
  int mask, alignment, window_left, window_right;
  Optional key_lengths, bias, alibi_slopes;
  std::optional<float> scale;
  float softcap;
};

struct MaskViews {
  TensorView key_lengths, bias, alibi_slopes;
};

attnforge::AttentionOptions options_of(const MaskArguments& m, MaskViews& views) {
  attnforge::AttentionOptions o;
  o.mask = static_cast<attnforge::MaskKind>(m.mask);
  o.alignment = static_cast<attnforge::MaskAlignment>(m.alignment);
  o.window_left = m.window_left;
  o.window_right = m.window_right;
  o.key_lengths = view(m.key_lengths, "key_lengths", views.key_lengths);
  o.bias = view(m.bias, "bias", views.bias);
  o.alibi_slopes = view(m.alibi_slopes, "alibi_slopes", views.alibi_slopes);
  o.scale = m.scale ? *m.scale : NAN;
  o.softcap = m.softcap;
  return o;
}

Result result(const Status& status) {
  return {attnforge::to_string(status.code), status.message};
}

// A modifier's tensors by name, in the order given.
using ModifierArrays = std::vector<std::pair<std::string, Array>>;

Result attention(const Array& q, const Array& k, const Array& v, const Array& out,
                 const MaskArguments& m, const Optional& page_table, const Optional& cu_seqlens_q,
                 const Optional& cu_seqlens_k, const Optional& weights, const Optional& lse,
                 const Optional& k_scale, const Optional& v_scale, const std::string& modifier,
                 const ModifierArrays& modifier_tensors,
                 attnforge::ModifierKeyRangeCache* key_range_cache) {
  MaskViews views;
  TensorView page_view, cu_q_view, cu_k_view, weights_view, lse_view, k_scale_view, v_scale_view;
  attnforge::AttentionOptions o = options_of(m, views);
  std::vector<TensorView> modifier_views;
  modifier_views.reserve(modifier_tensors.size());  // the options point into it
  o.modifier = modifier;
  o.key_range_cache = key_range_cache;
  for (const auto& [name, array] : modifier_tensors) {
    modifier_views.push_back(view(array, ("mod_tensors['" + name + "']").c_str()));
    o.modifier_tensors.push_back({name, &modifier_views.back()});
  }
  o.page_table = view(page_table, "page_table", page_view);
  o.k_scale = view(k_scale, "k_scale", k_scale_view);
  o.v_scale = view(v_scale, "v_scale", v_scale_view);
  o.cu_seqlens_q = view(cu_seqlens_q, "cu_seqlens_q", cu_q_view);
  o.cu_seqlens_k = view(cu_seqlens_k, "cu_seqlens_k", cu_k_view);
  o.weights = const_cast<TensorView*>(view(weights, "weights", weights_view));
  o.lse = const_cast<TensorView*>(view(lse, "lse", lse_view));
  const TensorView tq = view(q, "q"), tk = view(k, "k"), tv = view(v, "v"), tout = view(out, "out");
  Status status;
  {
    nb::gil_scoped_release release;
    status = attnforge::attention(tq, tk, tv, tout, o);
  }
  return result(status);
}

Result attention_backward(const Array& q, const Array& k, const Array& v, const Array& out,
                          const Array& d_out, const Array& lse, const Array& dq, const Array& dk,
                          const Array& dv, const MaskArguments& m, const Optional& d_bias) {
  MaskViews views;
  const attnforge::AttentionOptions o = options_of(m, views);
  TensorView d_bias_view;
  const TensorView* td_bias = view(d_bias, "d_bias", d_bias_view);
  const TensorView tq = view(q, "q"), tk = view(k, "k"), tv = view(v, "v"), tout = view(out, "out");
  const TensorView td_out = view(d_out, "d_out"), tlse = view(lse, "lse");
  const TensorView tdq = view(dq, "dq"), tdk = view(dk, "dk"), tdv = view(dv, "dv");
  Status status;
  {
    nb::gil_scoped_release release;
    status =
        attnforge::attention_backward(tq, tk, tv, tout, td_out, tlse, tdq, tdk, tdv, o, td_bias);
  }
  return result(status);
}

Result write_quantized_rows(const Array& rows, const Array& positions, const Array& cache,
                            const Array& scales, const Optional& page_table) {
  TensorView page_view;
  const TensorView* table = view(page_table, "page_table", page_view);
  const TensorView trows = view(rows, "rows"), tpositions = view(positions, "positions");
  const TensorView tcache = view(cache, "cache"), tscales = view(scales, "scales");
  Status status;
  {
    nb::gil_scoped_release release;
    status = attnforge::write_quantized_rows(trows, tpositions, tcache, tscales, table);
  }
  return result(status);
}

// The layer's parameters in LayerParameters order: w_qkv, b_qkv, w_q, w_k,
// w_v, b_q, b_k, b_v, w_o, b_o.
constexpr const char* kParameterNames[10] = {"w_qkv", "b_qkv", "w_q", "w_k", "w_v",
                                             "b_q",   "b_k",   "b_v", "w_o", "b_o"};

Result mha_layer(const Array& x, const Optional& x_kv, const std::vector<Optional>& parameters,
                 const Array& out, int heads, int kv_heads, const MaskArguments& m,
                 const Optional& weights, bool average_weights) {
  if (parameters.size() != 10) throw nb::value_error("parameters: expected 10 entries");
  TensorView views[10];
  const TensorView* p[10];
  for (int n = 0; n < 10; ++n) p[n] = view(parameters[n], kParameterNames[n], views[n]);
  attnforge::LayerParameters lp{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]};
  MaskViews mask_views;
  TensorView weights_view, kv_view;
  attnforge::LayerOptions o;
  o.heads = heads;
  o.kv_heads = kv_heads;
  o.attention = options_of(m, mask_views);
  o.attention.weights = const_cast<TensorView*>(view(weights, "weights", weights_view));
  o.average_weights = average_weights;
  const TensorView tx = view(x, x_kv ? "x_q" : "x"), tout = view(out, "out");
  const TensorView* tkv = view(x_kv, "x_kv", kv_view);
  Status status;
  {
    nb::gil_scoped_release release;
    status =
        tkv ? attnforge::mha_layer(tx, *tkv, lp, tout, o) : attnforge::mha_layer(tx, lp, tout, o);
  }
  return result(status);
}

}  // namespace

NB_MODULE(_attnforge, m) {
  m.doc() = "attnforge's runtime over an emitted kernel package (use the attnforge package)";
  nb::class_<MaskArguments>(m, "MaskArguments")
      .def(
          nb::init<int, int, int, int, Optional, Optional, Optional, std::optional<float>, float>(),
          nb::arg("mask"), nb::arg("alignment"), nb::arg("window_left"), nb::arg("window_right"),
          nb::arg("key_lengths").none(), nb::arg("bias").none(), nb::arg("alibi_slopes").none(),
          nb::arg("scale").none(), nb::arg("softcap"));
  m.def("attention", &attention, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
        nb::arg("mask_arguments"), nb::arg("page_table").none(), nb::arg("cu_seqlens_q").none(),
        nb::arg("cu_seqlens_k").none(), nb::arg("weights").none(), nb::arg("lse").none(),
        nb::arg("k_scale").none(), nb::arg("v_scale").none(), nb::arg("modifier"),
        nb::arg("modifier_tensors"), nb::arg("key_range_cache").none());
  m.def("attention_backward", &attention_backward, nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("out"), nb::arg("d_out"), nb::arg("lse"), nb::arg("dq"), nb::arg("dk"),
        nb::arg("dv"), nb::arg("mask_arguments"), nb::arg("d_bias").none());
  nb::class_<attnforge::ModifierKeyRangeCache>(m, "ModifierKeyRangeCache")
      .def(nb::init<>())
      .def_prop_ro("computed", &attnforge::ModifierKeyRangeCache::computed)
      .def_prop_ro("reused", &attnforge::ModifierKeyRangeCache::reused);
  m.def("write_quantized_rows", &write_quantized_rows, nb::arg("rows"), nb::arg("positions"),
        nb::arg("cache"), nb::arg("scales"), nb::arg("page_table").none());
  m.def("mha_layer", &mha_layer, nb::arg("x"), nb::arg("x_kv").none(), nb::arg("parameters"),
        nb::arg("out"), nb::arg("heads"), nb::arg("kv_heads"), nb::arg("mask_arguments"),
        nb::arg("weights").none(), nb::arg("average_weights"));
  m.def("available_kernels", [] {
    std::vector<std::vector<std::string>> kernels;
    for (const attnforge::KernelChoice& k : attnforge::available_kernels()) {
      kernels.push_back({k.function, k.spec, k.target, k.bucket});
    }
    return kernels;
  });
  m.def("set_num_threads", &attnforge::set_num_threads, nb::arg("threads"));
  // The enums' codes under the names the attnforge package takes, so the two
  // are written once, here.
  nb::dict masks, alignments;
  masks["none"] = static_cast<int>(attnforge::MaskKind::none);
  masks["causal"] = static_cast<int>(attnforge::MaskKind::causal);
  masks["sliding_window"] = static_cast<int>(attnforge::MaskKind::sliding_window);
  alignments["top_left"] = static_cast<int>(attnforge::MaskAlignment::top_left);
  alignments["bottom_right"] = static_cast<int>(attnforge::MaskAlignment::bottom_right);
  m.attr("MASK_CODES") = masks;
  m.attr("ALIGNMENT_CODES") = alignments;
}
