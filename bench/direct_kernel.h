// A packaged kernel called directly through its _argv entry point, with the
// arguments attnforge::attention would give it: what the runtime benchmarks
// set the runtime against. Header only: the package's kernel table is that of
// the program that includes it.
#pragma once

#include <stdexcept>
#include <string>

#include "attnforge/attention.h"
#include "attnforge/kernel_table.h"
#include "spec/kernel_arguments.h"

namespace attnforge::bench {

class DirectKernel {
 public:
  // The kernel `choice` names, on dense q, k, v and out (no optional tensors).
  DirectKernel(const KernelChoice& choice, halide_buffer_t* q, halide_buffer_t* k,
               halide_buffer_t* v, halide_buffer_t* out, float scale) {
    for (int n = 0; n < attnforge_kernel_package.count; ++n) {
      if (choice.function == attnforge_kernel_package.entries[n].function) {
        entry_ = attnforge_kernel_package.entries[n].argv;
      }
    }
    if (!entry_) throw std::runtime_error("no kernel " + choice.function + " in the package");
    args_.q = q;
    args_.k = k;
    args_.v = v;
    args_.out = out;
    args_.scale = scale;
    argv_ = kernel_argv(AttentionSpec::parse(choice.spec), args_);
  }
  DirectKernel(const DirectKernel&) = delete;  // argv_ points into args_
  DirectKernel& operator=(const DirectKernel&) = delete;

  // The kernel's Halide status.
  int operator()() { return entry_(argv_.data()); }

 private:
  int (*entry_)(void**) = nullptr;
  KernelArguments args_;
  KernelArgv argv_;
};

}  // namespace attnforge::bench
