// The inputs besides the tensors that shape a score, as a Generator's inputs:
// key lengths, a bias tensor, ALiBi slopes, the scale and a window given per
// call. Shared by the attention Generators (forward and backward), which
// declare them in their argument tables' order under the tables' names.
#pragma once

#include <Halide.h>

#include <string>

#include "algorithm/attention_inputs.h"
#include "spec/attention_spec.h"

namespace attnforge {

class ScoreInputs {
 public:
  // Declares argument `name` (`dims` dimensions, a bias in `storage`) where it
  // is one of these; false where it is not.
  template <typename Generator>
  bool declare(Generator& generator, const std::string& name, int dims, Halide::Type storage) {
    if (name == "key_lengths") {
      key_lengths_ = generator.template add_input<Halide::Buffer<int32_t>>(name, dims);
    } else if (name == "bias") {
      bias_ = generator.template add_input<Halide::Buffer<>>(name, storage, dims);
    } else if (name == "alibi_slopes") {
      alibi_slopes_ = generator.template add_input<Halide::Buffer<float>>(name, dims);
    } else if (name == "scale") {
      scale_ = generator.template add_input<float>(name);
    } else if (name == "window_left") {
      window_left_ = generator.template add_input<int32_t>(name);
    } else if (name == "window_right") {
      window_right_ = generator.template add_input<int32_t>(name);
    } else {
      return false;
    }
    return true;
  }

  // Every dim from 0, with the extents of a call of these sizes.
  void constrain(const AttentionSpec& spec, const Halide::Expr& batch, const Halide::Expr& q_len,
                 const Halide::Expr& kv_len) const {
    if (key_lengths_) key_lengths_->dim(0).set_bounds(0, batch);
    if (bias_) {
      const Halide::Expr extents[] = {kv_len, q_len, spec.heads, batch};
      for (int dim = 0; dim < 4; ++dim) bias_->dim(dim).set_bounds(0, extents[dim]);
    }
    if (alibi_slopes_) alibi_slopes_->dim(0).set_bounds(0, spec.heads);
  }

  void set_estimates(const AttentionSpec& spec, int batch, int q_len, int kv_len) const {
    if (key_lengths_) key_lengths_->set_estimates({{0, batch}});
    if (bias_) bias_->set_estimates({{0, kv_len}, {0, q_len}, {0, spec.heads}, {0, batch}});
    if (alibi_slopes_) alibi_slopes_->set_estimates({{0, spec.heads}});
    if (scale_) scale_->set_estimate(default_scale(spec.head_dim));
    if (window_left_) window_left_->set_estimate(kv_len / 8);
    if (window_right_) window_right_->set_estimate(0);
  }

  void add_to(AttentionInputs& in) const {
    in.scale = *scale_;
    if (window_left_) in.window_left = *window_left_;
    if (window_right_) in.window_right = *window_right_;
    if (key_lengths_) in.key_lengths = *key_lengths_;
    if (bias_) in.bias = *bias_;
    if (alibi_slopes_) in.alibi_slopes = *alibi_slopes_;
  }

 private:
  Halide::GeneratorInput<Halide::Buffer<int32_t>>* key_lengths_ = nullptr;
  Halide::GeneratorInput<Halide::Buffer<>>* bias_ = nullptr;
  Halide::GeneratorInput<Halide::Buffer<float>>* alibi_slopes_ = nullptr;
  Halide::GeneratorInput<float>* scale_ = nullptr;
  Halide::GeneratorInput<int32_t>* window_left_ = nullptr;
  Halide::GeneratorInput<int32_t>* window_right_ = nullptr;
};

}  // namespace attnforge
