#include "kernel_arguments.h"

#include <string>

namespace attnforge {

void* required_argument(halide_buffer_t* buffer, const char* name) {
  if (buffer == nullptr) throw SpecError(name, std::string(name) + " is required by this spec");
  return buffer;
}

halide_type_t halide_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return halide_type_t(halide_type_float, 32);
    case DType::f16:
      return halide_type_t(halide_type_float, 16);
    case DType::bf16:
      return halide_type_t(halide_type_bfloat, 16);
  }
  return halide_type_t(halide_type_float, 32);
}

void mark_host_inputs_dirty(KernelArguments& args) {
  for (halide_buffer_t* input :
       {args.q, args.k, args.v, args.key_lengths, args.page_table, args.bias, args.alibi_slopes}) {
    if (input && input->device == 0) input->flags |= halide_buffer_flag_host_dirty;
  }
}

KernelArgv kernel_argv(const AttentionSpec& spec, KernelArguments& args) {
  KernelArgv argv;
  argv.push(required_argument(args.q, "q"));
  argv.push(required_argument(args.k, "k"));
  argv.push(required_argument(args.v, "v"));
  if (spec.key_padding) argv.push(required_argument(args.key_lengths, "key_lengths"));
  if (spec.paged()) argv.push(required_argument(args.page_table, "page_table"));
  if (spec.bias == BiasKind::tensor) argv.push(required_argument(args.bias, "bias"));
  if (spec.bias == BiasKind::alibi) argv.push(required_argument(args.alibi_slopes, "alibi_slopes"));
  argv.push(&args.scale);
  argv.push(required_argument(args.out, "out"));
  if (spec.return_weights) argv.push(required_argument(args.weights, "weights"));
  return argv;
}

}  // namespace attnforge
