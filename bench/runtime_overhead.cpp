// Per-call overhead of the runtime: attnforge::attention (validation, kernel
// choice, buffer wrapping, the kernel) against the same kernel called
// directly through its _argv entry point, on a decode-sized problem where the
// kernel itself is short. Each figure is the median of 15 batches of calls.
#include <HalideBuffer.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "attnforge/attention.h"
#include "bench/direct_kernel.h"

namespace {

using namespace attnforge;

// Nanoseconds per call: the median over batches of `calls` calls.
double ns_per_call(const std::function<void()>& call, int calls) {
  std::vector<double> batches;
  for (int batch = 0; batch < 15; ++batch) {
    auto start = std::chrono::steady_clock::now();
    for (int n = 0; n < calls; ++n) call();
    std::chrono::duration<double, std::nano> spent = std::chrono::steady_clock::now() - start;
    batches.push_back(spent.count() / calls);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnforge runtime per-call overhead"};
  std::string json_path;
  int calls = 20000;
  app.add_option("--json", json_path, "Write the figures as JSON here");
  app.add_option("--calls", calls, "Calls per batch (default 20000)");
  CLI11_PARSE(app, argc, argv);

  constexpr int B = 1, H = 8, H_KV = 2, LQ = 1, LK = 16, D = 64;
  Halide::Runtime::Buffer<float> q(D, LQ, H, B), k(D, LK, H_KV, B), v(D, LK, H_KV, B),
      out(D, LQ, H, B);
  q.fill(0.5f);
  k.fill(0.25f);
  v.fill(1.0f);
  TensorView tq = TensorView::contiguous(q.data(), ElementType::f32, {B, H, LQ, D});
  TensorView tk = TensorView::contiguous(k.data(), ElementType::f32, {B, H_KV, LK, D});
  TensorView tv = TensorView::contiguous(v.data(), ElementType::f32, {B, H_KV, LK, D});
  TensorView tout = TensorView::contiguous(out.data(), ElementType::f32, {B, H, LQ, D});
  AttentionOptions options;
  options.mask = MaskKind::causal;
  options.alignment = MaskAlignment::bottom_right;
  set_num_threads(1);  // the overhead, not the thread pool, is measured

  KernelChoice choice;
  Status status = choose_kernel(tq, tk, tv, tout, options, &choice);
  if (!status.ok()) {
    fmt::print(stderr, "runtime_overhead: {}\n", status.message);
    return 1;
  }
  bench::DirectKernel kernel(choice, q.raw_buffer(), k.raw_buffer(), v.raw_buffer(),
                             out.raw_buffer(), 0.125f);

  const double direct = ns_per_call([&] { kernel(); }, calls);
  const double runtime = ns_per_call([&] { attention(tq, tk, tv, tout, options); }, calls);
  const double choose =
      ns_per_call([&] { choose_kernel(tq, tk, tv, tout, options, &choice); }, calls);
  fmt::print("kernel {} at B{} H{} Lq{} Lk{} D{}, 1 thread\n", choice.function, B, H, LQ, LK, D);
  fmt::print("  kernel called directly        {:8.0f} ns\n", direct);
  fmt::print("  attnforge::attention          {:8.0f} ns\n", runtime);
  fmt::print("  overhead (difference)         {:8.0f} ns  (target < 2000 ns)\n", runtime - direct);
  fmt::print("  validation + choice alone     {:8.0f} ns\n", choose);
  fmt::print("command: runtime_overhead --calls {}{}\n", calls,
             json_path.empty() ? "" : " --json " + json_path);
  if (!json_path.empty()) {
    std::ofstream(json_path) << nlohmann::json{{"kernel", choice.function},
                                               {"direct_ns", direct},
                                               {"runtime_ns", runtime},
                                               {"overhead_ns", runtime - direct},
                                               {"validation_and_choice_ns", choose}}
                                    .dump(2)
                             << "\n";
  }
  return 0;
}
