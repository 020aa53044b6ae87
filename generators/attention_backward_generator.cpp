// The attention backward Generator: dq, dk and dv (algorithm/backward_form.h)
// for a spec (GeneratorParam `spec`, its canonical string) under a schedule
// (`schedule`: "naive"; a backward preset's name or schedule JSON,
// schedules/backward_schedule.h; or "auto" for an autoscheduler given in the
// GeneratorContext, planning for the estimate_* shape). Its arguments are
// spec/backward_arguments.h's table, in that order. On CUDA and OpenCL
// targets, the GPU row form (schedules/apply_cuda_backward.h), which takes
// and returns bf16 tensors as their 16 bits.
#include <Halide.h>

#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include "algorithm/attention_inputs.h"
#include "algorithm/attention_terms.h"
#include "algorithm/backward_form.h"
#include "algorithm/bf16_bits.h"
#include "schedules/apply_cuda_backward.h"
#include "schedules/apply_x86_backward.h"
#include "schedules/backward_schedule.h"
#include "schedules/schedule.h"
#include "score_inputs.h"
#include "spec/attention_spec.h"
#include "spec/backward_arguments.h"

namespace attnforge {
namespace {

using Halide::Buffer;
using Halide::Expr;
using Halide::GeneratorInput;
using Halide::GeneratorOutput;

class AttentionBackwardGenerator : public Halide::Generator<AttentionBackwardGenerator> {
 public:
  Halide::GeneratorParam<std::string> spec{"spec", ""};
  Halide::GeneratorParam<std::string> schedule{"schedule", "naive"};
  Halide::GeneratorParam<int> estimate_batch{"estimate_batch", 1};
  Halide::GeneratorParam<int> estimate_q_len{"estimate_q_len", 2048};
  Halide::GeneratorParam<int> estimate_kv_len{"estimate_kv_len", 2048};

  void configure() {
    spec_ = AttentionSpec::parse(std::string(spec));
    if (auto misfit = backward_misfit(spec_)) throw *misfit;
    const std::string choice = schedule;
    if (choice != "naive" && choice != "auto") {
      tuned_ = schedules::resolve_backward_schedule(choice);
      if (auto misfit = schedules::check_backward(*tuned_, spec_, get_target())) throw *misfit;
    } else if (get_target().has_gpu_feature()) {
      throw SpecError("schedule", spec_.to_string() + ": a GPU target takes a GPU schedule (" +
                                      choice + " has none), such as backward_rows_gpu");
    }
    for_each_backward_argument(spec_, [this](const BackwardArgumentSlot& slot) { declare(slot); });
  }

  // bf16 on a GPU travels as its 16 bits (bf16_bits.h): inputs widened to
  // f32 on load, gradients rounded on the integer bits.
  bool storage_as_bits() const {
    return spec_.dtype == DType::bf16 && get_target().has_gpu_feature();
  }

  void declare(const BackwardArgumentSlot& slot) {
    const Halide::Type storage =
        storage_as_bits() ? Halide::UInt(16) : storage_type_of(spec_.dtype);
    const char* name = slot.name;
    switch (slot.argument) {
      case BackwardArgument::q:
      case BackwardArgument::k:
      case BackwardArgument::v:
      case BackwardArgument::out:
      case BackwardArgument::d_out:
        tensors_.push_back(add_input<Buffer<>>(name, storage, 4));
        break;
      case BackwardArgument::lse:
        lse_ = add_input<Buffer<float>>(name, 3);
        break;
      case BackwardArgument::key_lengths:
      case BackwardArgument::bias:
      case BackwardArgument::alibi_slopes:
      case BackwardArgument::scale:
      case BackwardArgument::window_left:
      case BackwardArgument::window_right:
        score_inputs_.declare(*this, name, slot.dimensions, storage);
        break;
      case BackwardArgument::dq:
      case BackwardArgument::dk:
      case BackwardArgument::dv:
        gradients_.push_back(add_output<Buffer<>>(name, storage, 4));
        break;
      case BackwardArgument::d_bias:
        d_bias_ = add_output<Buffer<>>(name, storage, 4);
        break;
    }
  }

  void generate() {
    auto [q, k, v, out, d_out] = inputs();
    auto [dq, dk, dv] = outputs();
    const int d = spec_.head_dim;
    const Expr q_len = q.dim(1).extent(), kv_len = k.dim(1).extent(), batch = q.dim(3).extent();
    auto constrain = [](auto& buffer, const std::vector<Expr>& extents) {
      for (int dim = 0; dim < static_cast<int>(extents.size()); ++dim) {
        buffer.dim(dim).set_min(0);
        if (extents[dim].defined()) buffer.dim(dim).set_extent(extents[dim]);
      }
    };
    constrain(q, {d, Expr(), spec_.heads, Expr()});
    constrain(k, {d, Expr(), spec_.kv_heads, batch});
    constrain(v, {d, kv_len, spec_.kv_heads, batch});
    for (auto* rows : {&out, &d_out}) constrain(*rows, {d, q_len, spec_.heads, batch});
    constrain(dq, {d, q_len, spec_.heads, batch});
    for (auto* rows : {&dk, &dv}) constrain(*rows, {d, kv_len, spec_.kv_heads, batch});
    constrain(*lse_, {q_len, spec_.heads, batch});
    if (d_bias_) constrain(*d_bias_, {kv_len, q_len, spec_.heads, batch});
    score_inputs_.constrain(spec_, batch, q_len, kv_len);

    AttentionInputs in;
    in.q = q;
    in.k = k;
    in.v = v;
    in.q_len = q_len;
    in.kv_len = kv_len;
    score_inputs_.add_to(in);
    GradientInputs gradient_inputs{out, d_out, *lse_};
    // With bf16 as bits, the algorithm computes in f32 on the widened tensors.
    AttentionSpec algorithm_spec = spec_;
    std::function<Expr(const Expr&)> to_output = [](const Expr& value) { return value; };
    if (storage_as_bits()) {
      algorithm_spec.dtype = DType::f32;
      in.q = f32_of_bf16_bits(q, 4, "q_f32");
      in.k = f32_of_bf16_bits(k, 4, "k_f32");
      in.v = f32_of_bf16_bits(v, 4, "v_f32");
      if (in.bias.defined()) in.bias = f32_of_bf16_bits(in.bias, 4, "bias_f32");
      gradient_inputs.out = f32_of_bf16_bits(out, 4, "out_f32");
      gradient_inputs.d_out = f32_of_bf16_bits(d_out, 4, "d_out_f32");
      to_output = [](const Expr& value) { return bf16_bits_of(value); };
    }
    const AttentionVars vars;
    BackwardBlocks blocks;
    if (tuned_) blocks = {tuned_->key_block, tuned_->query_block, tuned_->bf16_dots == 1};
    BackwardFuncs f = build_backward(algorithm_spec, in, gradient_inputs, vars, blocks);
    dq(vars.d, vars.i, vars.h, vars.b) = to_output(f.dq(vars.d, vars.i, vars.h, vars.b));
    dk(vars.d, vars.j, vars.h, vars.b) = to_output(f.dk(vars.d, vars.j, vars.h, vars.b));
    dv(vars.d, vars.j, vars.h, vars.b) = to_output(f.dv(vars.d, vars.j, vars.h, vars.b));
    schedules::BackwardOutputs outputs{dq, dk, dv};
    if (d_bias_) {
      (*d_bias_)(vars.j, vars.i, vars.h, vars.b) =
          to_output(f.d_bias(vars.j, vars.i, vars.h, vars.b));
      outputs.d_bias = *d_bias_;
    }
    set_estimates(q, k, v, out, d_out, dq, dk, dv);
    if (tuned_ && tuned_->gpu) {
      schedules::apply_cuda_backward(*tuned_, f, outputs, vars, spec_.softcapped(), spec_.head_dim);
    } else if (tuned_) {
      schedules::apply_x86_backward(*tuned_, f, outputs, vars, spec_.softcapped());
    } else if (std::string(schedule) == "naive") {
      schedules::apply_naive_backward(f);
    }
  }

 private:
  using Tensor = GeneratorInput<Buffer<>>;
  using Gradient = GeneratorOutput<Buffer<>>;

  std::tuple<Tensor&, Tensor&, Tensor&, Tensor&, Tensor&> inputs() {
    return {*tensors_[0], *tensors_[1], *tensors_[2], *tensors_[3], *tensors_[4]};
  }
  std::tuple<Gradient&, Gradient&, Gradient&> outputs() {
    return {*gradients_[0], *gradients_[1], *gradients_[2]};
  }

  // The shape an autoscheduler plans for.
  void set_estimates(Tensor& q, Tensor& k, Tensor& v, Tensor& out, Tensor& d_out, Gradient& dq,
                     Gradient& dk, Gradient& dv) {
    const int B = estimate_batch, Lq = estimate_q_len, Lk = estimate_kv_len;
    const int d = spec_.head_dim;
    const Halide::Region rows = {{0, d}, {0, Lq}, {0, spec_.heads}, {0, B}};
    const Halide::Region keys = {{0, d}, {0, Lk}, {0, spec_.kv_heads}, {0, B}};
    for (Tensor* t : {&q, &out, &d_out}) t->set_estimates(rows);
    for (Tensor* t : {&k, &v}) t->set_estimates(keys);
    dq.set_estimates(rows);
    dk.set_estimates(keys);
    dv.set_estimates(keys);
    lse_->set_estimates({{0, Lq}, {0, spec_.heads}, {0, B}});
    if (d_bias_) d_bias_->set_estimates({{0, Lk}, {0, Lq}, {0, spec_.heads}, {0, B}});
    score_inputs_.set_estimates(spec_, B, Lq, Lk);
  }

  AttentionSpec spec_;
  std::optional<schedules::BackwardSchedule> tuned_;
  std::vector<Tensor*> tensors_;  // q, k, v, out, d_out
  GeneratorInput<Buffer<float>>* lse_ = nullptr;
  ScoreInputs score_inputs_;
  std::vector<Gradient*> gradients_;  // dq, dk, dv
  Gradient* d_bias_ = nullptr;        // .dbias only
};

}  // namespace
}  // namespace attnforge

HALIDE_REGISTER_GENERATOR(attnforge::AttentionBackwardGenerator, attention_backward)
