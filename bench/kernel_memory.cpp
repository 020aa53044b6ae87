// What kernel_memory saves an AOT kernel: a fused kernel with 64-row query
// tiles (512 KB of logits per tile at Lk 2048) from an emitted package, called
// directly with Halide's default allocator, then with kernel_memory, then
// through attnforge::attention (which installs kernel_memory). Both
// allocators must give bit-identical outputs.
#include <HalideBuffer.h>
#include <HalideRuntime.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "attnforge/attention.h"
#include "bench/direct_kernel.h"
#include "bench/timing.h"
#include "kernel_support/halide_memory.h"

namespace {

using namespace attnforge;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Milliseconds of one call: the median of `runs` after one warm-up.
double ms_per_call(const std::function<void()>& call, int runs) {
  return bench::time_runs(call, {runs, 0.0, runs}).median_ms;
}

void use_halide_default_allocator() {
  halide_set_custom_malloc(halide_default_malloc);
  halide_set_custom_free(halide_default_free);
}
void use_kernel_memory() {
  halide_set_custom_free(kernel_memory_free_any);
  halide_set_custom_malloc(kernel_memory_malloc);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnforge kernel memory: an AOT kernel with each allocator"};
  std::string json_path;
  int threads = 2, rounds = 5, runs = 5;
  app.add_option("--threads", threads, "Kernel threads (default 2)");
  app.add_option("--rounds", rounds, "Rounds per allocator (default 5)");
  app.add_option("--runs", runs, "Timed calls per round and allocator (default 5)");
  app.add_option("--json", json_path, "Write the figures as JSON here");
  CLI11_PARSE(app, argc, argv);

  constexpr int B = 1, H = 8, L = 2048, D = 64;
  Halide::Runtime::Buffer<float> q(D, L, H, B), k(D, L, H, B), v(D, L, H, B), out(D, L, H, B),
      reference(D, L, H, B);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto* buffer : {&q, &k, &v}) buffer->for_each_value([&](float& x) { x = uniform(random); });
  auto view = [](Halide::Runtime::Buffer<float>& b) {
    return TensorView::contiguous(b.data(), ElementType::f32, {B, H, L, D});
  };
  TensorView tq = view(q), tk = view(k), tv = view(v), tout = view(out);
  set_num_threads(threads);

  KernelChoice choice;
  Status status = choose_kernel(tq, tk, tv, tout, {}, &choice);
  if (!status.ok() || choice.bucket == "generic") {
    fmt::print(stderr, "kernel_memory: no tuned kernel for B1 H8 L2048: {}\n", status.message);
    return 1;
  }
  bench::DirectKernel kernel(choice, q.raw_buffer(), k.raw_buffer(), v.raw_buffer(),
                             out.raw_buffer(), 0.125f);
  auto call_kernel = [&] { kernel(); };

  // Halide's default allocator first, while kernel_memory has not yet taken
  // blocks from the C library's heap (which changes how that heap behaves).
  std::vector<double> with_default, with_kernel_memory;
  use_halide_default_allocator();
  for (int round = 0; round < rounds; ++round) {
    with_default.push_back(ms_per_call(call_kernel, runs));
  }
  reference.copy_from(out);
  use_kernel_memory();
  for (int round = 0; round < rounds; ++round) {
    with_kernel_memory.push_back(ms_per_call(call_kernel, runs));
  }
  const bool identical = std::memcmp(out.data(), reference.data(), out.size_in_bytes()) == 0;
  use_halide_default_allocator();  // attention() installs kernel_memory over the default
  const double through_runtime = ms_per_call([&] { attention(tq, tk, tv, tout, {}); }, runs);

  const double default_ms = median(with_default), pooled_ms = median(with_kernel_memory);
  fmt::print("kernel {} ({}, bucket {}) at B{} H{} L{} D{}, {} threads\n", choice.function,
             choice.spec, choice.bucket, B, H, L, D, threads);
  fmt::print("  Halide's default allocator     {:8.2f} ms\n", default_ms);
  fmt::print("  kernel_memory                  {:8.2f} ms  ({:.2f}x)\n", pooled_ms,
             default_ms / pooled_ms);
  fmt::print("  attnforge::attention           {:8.2f} ms\n", through_runtime);
  fmt::print("  outputs bit-identical: {}\n", identical ? "yes" : "NO");
  fmt::print("command: kernel_memory --threads {} --rounds {} --runs {}{}\n", threads, rounds, runs,
             json_path.empty() ? "" : " --json " + json_path);
  if (!json_path.empty()) {
    std::ofstream(json_path) << nlohmann::json{{"kernel", choice.function},
                                               {"threads", threads},
                                               {"default_allocator_ms", default_ms},
                                               {"kernel_memory_ms", pooled_ms},
                                               {"attention_ms", through_runtime},
                                               {"speedup", default_ms / pooled_ms},
                                               {"outputs_identical", identical}}
                                    .dump(2)
                             << "\n";
  }
  return identical ? 0 : 1;
}
