#include "layer_arguments.h"

namespace attnforge {

KernelArgv layer_argv(const LayerSpec& spec, LayerArguments& args) {
  KernelArgv argv;
  auto push = [&](halide_buffer_t* buffer, const char* name) {
    argv.push(required_argument(buffer, name));
  };
  const bool bias = spec.projection_bias;
  if (spec.self_attention) {
    push(args.x_q, "x");
    push(args.w_qkv, "w_qkv");
    if (bias) push(args.b_qkv, "b_qkv");
  } else {
    push(args.x_q, "x_q");
    push(args.x_kv, "x_kv");
    push(args.w_q, "w_q");
    push(args.w_k, "w_k");
    push(args.w_v, "w_v");
    if (bias) {
      push(args.b_q, "b_q");
      push(args.b_k, "b_k");
      push(args.b_v, "b_v");
    }
  }
  push(args.w_o, "w_o");
  if (bias) push(args.b_o, "b_o");
  const AttentionSpec& a = spec.attention;
  if (a.key_padding) push(args.key_lengths, "key_lengths");
  if (a.bias == BiasKind::tensor) push(args.bias, "bias");
  if (a.bias == BiasKind::alibi) push(args.alibi_slopes, "alibi_slopes");
  argv.push(&args.scale);
  push(args.out, "out");
  if (spec.weights != LayerWeights::none) push(args.weights, "weights");
  return argv;
}

}  // namespace attnforge
