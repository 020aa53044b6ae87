#include "kernel_arguments.h"

#include <string>

namespace attnforge {

namespace {

void* required(halide_buffer_t* buffer, const char* name) {
  if (buffer == nullptr) throw SpecError(name, std::string(name) + " is required by this spec");
  return buffer;
}

}  // namespace

std::vector<void*> kernel_argv(const AttentionSpec& spec, KernelArguments& args) {
  std::vector<void*> argv = {required(args.q, "q"), required(args.k, "k"), required(args.v, "v")};
  if (spec.key_padding) argv.push_back(required(args.key_lengths, "key_lengths"));
  if (spec.bias == BiasKind::tensor) argv.push_back(required(args.bias, "bias"));
  if (spec.bias == BiasKind::alibi) argv.push_back(required(args.alibi_slopes, "alibi_slopes"));
  argv.push_back(&args.scale);
  argv.push_back(required(args.out, "out"));
  if (spec.return_weights) argv.push_back(required(args.weights, "weights"));
  return argv;
}

}  // namespace attnforge
