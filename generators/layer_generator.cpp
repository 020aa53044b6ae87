// The multi-head attention layer Generator. GeneratorParams: the layer spec's
// canonical string and the schedule ("naive", a preset name or schedule JSON;
// unset projection knobs take the target's defaults). Its arguments are
// spec/layer_arguments.h's layer_argument_table, in that order.
#include <Halide.h>

#include "schedules/apply_layer_x86.h"
#include "schedules/layer_schedule.h"
#include "schedules/prefetch_lines.h"
#include "schedules/presets.h"
#include "schedules/schedule_choice.h"
#include "spec/layer_arguments.h"
#include "spec/layer_spec.h"

namespace attnforge {
namespace {

using Halide::Buffer;
using Halide::Expr;
using Halide::GeneratorInput;
using Halide::GeneratorOutput;
using Halide::GeneratorParam;

using FloatInput = GeneratorInput<Buffer<float>>;

class LayerGenerator : public Halide::Generator<LayerGenerator> {
 public:
  GeneratorParam<std::string> spec{"spec", "self.dm64.full.mha1.d64.f32"};
  GeneratorParam<std::string> schedule{"schedule", "naive"};
  // The shape the pipeline's estimates describe.
  GeneratorParam<int> estimate_batch{"estimate_batch", 1};
  GeneratorParam<int> estimate_q_len{"estimate_q_len", 2048};
  GeneratorParam<int> estimate_kv_len{"estimate_kv_len", 2048};

  void configure() {
    spec_ = LayerSpec::parse(std::string(spec));
    if (get_target().has_gpu_feature()) {
      throw SpecError("target", "the layer is built for CPUs; '" + get_target().to_string() +
                                    "' has a GPU feature");
    }
    for_each_layer_argument(spec_, [this](const LayerArgumentSlot& slot) { declare(slot); });
  }

  // One argument, in spec/layer_arguments.h's table order.
  void declare(const LayerArgumentSlot& slot) {
    const char* name = slot.name;
    const int dims = slot.dimensions;
    switch (slot.argument) {
      case LayerArgument::key_lengths:
        key_lengths_ = add_input<Buffer<int32_t>>(name, dims);
        return;
      case LayerArgument::scale:
        scale_ = add_input<float>(name);
        return;
      case LayerArgument::out:
        out_ = add_output<Buffer<float>>(name, dims);
        return;
      case LayerArgument::weights:
        weights_ = add_output<Buffer<float>>(name, dims);
        return;
      default:
        *float_input(slot.argument) = add_input<Buffer<float>>(name, dims);
    }
  }

  // The member that holds a float input.
  FloatInput** float_input(LayerArgument argument) {
    using A = LayerArgument;
    switch (argument) {
      case A::x:
      case A::x_q:
        return &x_q_;
      case A::x_kv:
        return &x_kv_;
      case A::w_qkv:
        return &w_qkv_;
      case A::b_qkv:
        return &b_qkv_;
      case A::w_q:
        return &w_q_;
      case A::w_k:
        return &w_k_;
      case A::w_v:
        return &w_v_;
      case A::b_q:
        return &b_q_;
      case A::b_k:
        return &b_k_;
      case A::b_v:
        return &b_v_;
      case A::w_o:
        return &w_o_;
      case A::b_o:
        return &b_o_;
      case A::bias:
        return &attn_bias_;
      default:
        return &alibi_slopes_;
    }
  }

  void generate() {
    constrain_shapes();
    LayerInputs in = inputs();
    const std::string choice = schedule;
    schedules::Schedule chosen;
    if (choice == "naive") {
      chosen.form = schedules::Form::materialized;
    } else {
      chosen =
          schedules::with_projection_defaults(schedules::resolve_schedule(choice), get_target());
      schedules::validate_layer(chosen, spec_, get_target());
    }
    schedules::LayerPipeline p = schedules::build_layer_pipeline(spec_, in, chosen);
    define_outputs(p);
    set_estimates();
    if (choice == "naive") {
      schedules::apply_layer_naive(p, get_target());
    } else {
      schedules::apply_layer_x86(chosen, p, spec_);
      schedules::fix_prefetch_line_steps(get_pipeline());
    }
  }

 private:
  LayerInputs inputs() const {
    LayerInputs in;
    in.x_q = *x_q_;
    in.x_kv = x_kv_ ? Halide::Func(*x_kv_) : in.x_q;
    in.q_len = x_q_->dim(1).extent();
    // Self-attention's key count is its query count, hidden from the
    // simplifier: tile bounds that mix the two stay constant, as in the
    // attention Generator, where they are separate symbols.
    in.kv_len = x_kv_ ? x_kv_->dim(1).extent()
                      : Halide::unsafe_promise_clamped(in.q_len, 1, Halide::Int(32).max());
    auto func = [](FloatInput* input) { return input ? Halide::Func(*input) : Halide::Func(); };
    in.w_qkv = func(w_qkv_);
    in.b_qkv = func(b_qkv_);
    in.w_q = func(w_q_);
    in.w_k = func(w_k_);
    in.w_v = func(w_v_);
    in.b_q = func(b_q_);
    in.b_k = func(b_k_);
    in.b_v = func(b_v_);
    in.w_o = *w_o_;
    in.b_o = func(b_o_);
    in.attention.scale = *scale_;
    if (key_lengths_) in.attention.key_lengths = *key_lengths_;
    if (attn_bias_) in.attention.bias = *attn_bias_;
    if (alibi_slopes_) in.attention.alibi_slopes = *alibi_slopes_;
    return in;
  }

  // The Outputs read the pipeline's stages and take their place as the stages
  // the schedule treats as outputs.
  void define_outputs(schedules::LayerPipeline& p) {
    const AttentionVars& v = p.attention.vars;
    const Halide::Var m = p.output_projection.m;
    (*out_)(m, v.i, v.b) = p.output_projection.output(m, v.i, v.b);
    p.output = *out_;
    if (spec_.weights == LayerWeights::per_head) {
      (*weights_)(v.j, v.i, v.h, v.b) = p.attention.weights(v.j, v.i, v.h, v.b);
      p.attention.weights = *weights_;
      p.weights = *weights_;
    } else if (spec_.weights == LayerWeights::averaged) {
      Halide::Func average = average_over_heads(spec_, p.attention.weights, v);
      (*weights_)(v.j, v.i, v.b) = average(v.j, v.i, v.b);
      p.weights = *weights_;
    }
  }

  // Every buffer with its extents, activations (feature, position, batch) and
  // weights (out, in), for these batch and lengths: the one table that both
  // the shape constraints and the estimates read.
  template <typename Visit>
  void for_each_buffer(const Expr& batch, const Expr& q_len, const Expr& kv_len, Visit visit) {
    const int dm = spec_.d_model, H = spec_.attention.heads, D = spec_.head_dim();
    const int kv_features = spec_.attention.kv_heads * D;
    visit(x_q_, {dm, q_len, batch});
    visit(x_kv_, {dm, kv_len, batch});
    visit(w_qkv_, {spec_.qkv_features(), dm});
    visit(b_qkv_, {spec_.qkv_features()});
    visit(w_q_, {H * D, dm});
    visit(w_k_, {kv_features, dm});
    visit(w_v_, {kv_features, dm});
    visit(b_q_, {H * D});
    visit(b_k_, {kv_features});
    visit(b_v_, {kv_features});
    visit(w_o_, {dm, H * D});
    visit(b_o_, {dm});
    visit(key_lengths_, {batch});
    visit(attn_bias_, {kv_len, q_len, H, batch});
    visit(alibi_slopes_, {H});
    visit(out_, {dm, q_len, batch});
    if (spec_.weights == LayerWeights::per_head) visit(weights_, {kv_len, q_len, H, batch});
    if (spec_.weights == LayerWeights::averaged) visit(weights_, {kv_len, q_len, batch});
  }

  // Every min is 0; sizes follow x_q (batch, Lq) and x_kv (Lk), whose own are free.
  void constrain_shapes() {
    const Expr batch = x_q_->dim(2).extent(), q_len = x_q_->dim(1).extent();
    const Expr kv_len = x_kv_ ? x_kv_->dim(1).extent() : q_len;
    for_each_buffer(batch, q_len, kv_len, [&](auto* buffer, std::vector<Expr> extents) {
      if (!buffer) return;
      for (size_t dim = 0; dim < extents.size(); ++dim) {
        buffer->dim(dim).set_min(0);
        const bool own_size = static_cast<void*>(buffer) == static_cast<void*>(x_q_) ||
                              (static_cast<void*>(buffer) == static_cast<void*>(x_kv_) && dim == 1);
        if (dim == 0 || !own_size) buffer->dim(dim).set_extent(extents[dim]);
      }
    });
  }

  void set_estimates() {
    for_each_buffer(Expr(int(estimate_batch)), Expr(int(estimate_q_len)),
                    Expr(int(estimate_kv_len)), [](auto* buffer, std::vector<Expr> extents) {
                      if (!buffer) return;
                      Halide::Region region;
                      for (const Expr& extent : extents) region.push_back({0, extent});
                      buffer->set_estimates(region);
                    });
    scale_->set_estimate(default_scale(spec_.head_dim()));
  }

  LayerSpec spec_;
  FloatInput *x_q_ = nullptr, *x_kv_ = nullptr;
  FloatInput *w_qkv_ = nullptr, *b_qkv_ = nullptr;
  FloatInput *w_q_ = nullptr, *w_k_ = nullptr, *w_v_ = nullptr;
  FloatInput *b_q_ = nullptr, *b_k_ = nullptr, *b_v_ = nullptr;
  FloatInput *w_o_ = nullptr, *b_o_ = nullptr;
  GeneratorInput<Buffer<int32_t>>* key_lengths_ = nullptr;
  FloatInput* attn_bias_ = nullptr;
  FloatInput* alibi_slopes_ = nullptr;
  GeneratorInput<float>* scale_ = nullptr;
  GeneratorOutput<Buffer<float>>* out_ = nullptr;
  GeneratorOutput<Buffer<float>>* weights_ = nullptr;
};

}  // namespace
}  // namespace attnforge

HALIDE_REGISTER_GENERATOR(attnforge::LayerGenerator, mha_layer)
