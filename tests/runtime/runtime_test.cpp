// The runtime against an emitted package: results match the double reference
// for every packaged spec on odd sizes; dispatch picks the tuned kernel of the
// call's shape bucket, else the generic one; every bad argument is a clear
// error that leaves out untouched; concurrent calls are correct; kernels take
// their memory from kernel_memory unless the application set an allocator.
#include <HalideRuntime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "attnforge/attention.h"
#include "kernel_support/kernel_memory.h"
#include "tensor_views.h"

namespace attnforge::testing {
namespace {

const char* const kPackageSpecs[] = {
    "causal.gqa8x2.d64.f32",          "full.mha2.d32.f32.weights",
    "window8_4.br.kpad.mha2.d32.f16", "full.bias.mqa4.d32.bf16",
    "causal.br.alibi.mha2.d32.f32",   "causal.br.kpad.page16.gqa8x2.d64.f32"};

void expect_matches_reference(const std::string& spec_text, CaseShape shape,
                              CaseOptions options = {}) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  AttentionCase c(spec, shape, options);
  RuntimeCall call(spec, c);
  Status status = call.run();
  ASSERT_TRUE(status.ok()) << spec_text << ": " << status.message;
  Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << spec_text << " B" << shape.batch << " Lq" << shape.q_len << " Lk"
                         << shape.kv_len << ": " << result.first_failure;
}

// The attention specs the package has kernels for (layers: layer_runtime_test.cpp).
std::set<std::string> packaged_attention_specs() {
  std::set<std::string> specs;
  for (const KernelChoice& k : available_kernels()) {
    if (k.spec.rfind("self.", 0) == 0 || k.spec.rfind("cross.", 0) == 0) continue;
    if (AttentionSpec::parse(k.spec).modified()) continue;  // ModifierRuntimeTest
    if (k.bucket == "backward") continue;                   // backward_runtime_test.cpp
    specs.insert(k.spec);
  }
  return specs;
}

TEST(Runtime, EveryPackagedSpecMatchesTheReferenceOnOddSizes) {
  const std::set<std::string> specs = packaged_attention_specs();
  EXPECT_EQ(specs.size(), 18u);  // the backward specs' .lse forwards among them
  EXPECT_EQ(specs.count("causal.br.kpad.gqa8x2.d64.f32.lse"), 1u);  // out and lse
  // A head dim of five 8-lane vectors: on an AVX-512 host its kernels are 8 lanes wide.
  EXPECT_EQ(specs.count("causal.br.kpad.gqa4x2.d40.f32"), 1u);
  for (const std::string& spec : specs) {
    for (CaseShape shape : {CaseShape{1, 1, 1}, CaseShape{2, 7, 33}, CaseShape{3, 65, 40},
                            CaseShape{1, 64, 64}, CaseShape{2, 1, 100}}) {
      expect_matches_reference(spec, shape);
    }
  }
}

TEST(Runtime, StridedLayoutsAndBroadcastBiasWork) {
  expect_matches_reference("causal.gqa8x2.d64.f32", {2, 19, 23}, {Layout::blhd});
  // A paged cache as FlashAttention lays it out: [num_pages, page_size, H_kv, D].
  expect_matches_reference("causal.br.kpad.page16.gqa8x2.d64.f32", {3, 1, 50}, {Layout::blhd});
  CaseOptions broadcast;
  broadcast.broadcast_bias = true;
  expect_matches_reference("full.bias.mqa4.d32.bf16", {2, 9, 17}, broadcast);
}

TEST(Runtime, DispatchPrefersTheTunedBucketThenTheGenericKernel) {
  const AttentionSpec spec = AttentionSpec::parse("causal.gqa8x2.d64.f32");
  AttentionCase tuned_shape(spec, {1, 64, 64}), other_shape(spec, {1, 300, 200}),
      decode_shape(spec, {2, 1, 500});
  KernelChoice choice;
  RuntimeCall tuned(spec, tuned_shape);
  ASSERT_TRUE(choose_kernel(tuned.q, tuned.k, tuned.v, tuned.out, tuned.options, &choice).ok());
  EXPECT_EQ(choice.bucket, "b1.q64.k64");
  EXPECT_EQ(choice.spec, "causal.gqa8x2.d64.f32");
  RuntimeCall other(spec, other_shape);
  ASSERT_TRUE(choose_kernel(other.q, other.k, other.v, other.out, other.options, &choice).ok());
  EXPECT_EQ(choice.bucket, "generic");
  EXPECT_EQ(choice.function.find("cuda"), std::string::npos);  // host tensors: CPU kernels
  RuntimeCall decode(spec, decode_shape);
  ASSERT_TRUE(
      choose_kernel(decode.q, decode.k, decode.v, decode.out, decode.options, &choice).ok());
  EXPECT_EQ(choice.bucket, "generic.q16");  // a group of 4 heads fills the decoder's tiles
}

// One query row per head (MHA decoding) takes the kernel whose tiles hold one
// query; 2 to 16 rows take the short-query kernel.
TEST(Runtime, OneQueryRowTakesTheOneRowKernel) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.alibi.mha2.d32.f32");
  KernelChoice choice;
  for (const auto& [q_len, bucket] : {std::pair{1, "generic.q1"}, std::pair{3, "generic.q16"},
                                      std::pair{16, "generic.q16"}, std::pair{17, "generic"}}) {
    AttentionCase shape(spec, {2, q_len, 50});
    RuntimeCall call(spec, shape);
    ASSERT_TRUE(choose_kernel(call.q, call.k, call.v, call.out, call.options, &choice).ok());
    EXPECT_EQ(choice.bucket, bucket) << "Lq " << q_len;
  }
}

// lse is checked like every tensor: its shape, type and place are named, and
// on any error neither it nor out is written.
TEST(Runtime, BadLseIsNamedAndNothingIsWritten) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.kpad.gqa8x2.d64.f32.lse");
  AttentionCase c(spec, {2, 5, 9});
  RuntimeCall call(spec, c);
  std::vector<float> short_lse(2 * 8 * 4, 7.0f), wrong_type(2 * 8 * 5, 7.0f);
  TensorView too_short = TensorView::contiguous(short_lse.data(), ElementType::f32, {2, 8, 4});
  TensorView as_f16 = TensorView::contiguous(wrong_type.data(), ElementType::f16, {2, 8, 5});
  const std::vector<double> out_before = c.output();
  for (auto [lse, message] :
       {std::pair{&too_short, "lse: expected shape [B, H, Lq] = [2, 8, 5], got [2, 8, 4]"},
        std::pair{&as_f16, "lse: expected element type f32, got f16"}}) {
    call.options.lse = lse;
    const Status status = call.run();
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message.find(message), std::string::npos) << status.message;
  }
  EXPECT_EQ(c.output(), out_before);
  for (float value : short_lse) EXPECT_EQ(value, 7.0f);
}

TEST(Runtime, ThePackageHoldsGenericKernelsPerTargetAndOnlyCorrectTunedOnes) {
  int generic = 0, short_queries = 0, one_row = 0, tuned = 0, cuda = 0, layers = 0, backward = 0;
  for (const KernelChoice& k : available_kernels()) {
    if (k.spec.rfind("self.", 0) == 0 || k.spec.rfind("cross.", 0) == 0) {
      ++layers;
      EXPECT_EQ(k.bucket, "generic");
      EXPECT_EQ(k.target.find("cuda"), std::string::npos) << k.function;
      continue;
    }
    if (k.bucket == "generic") ++generic;
    if (k.bucket == "generic.q16") ++short_queries;
    if (k.bucket == "generic.q1") ++one_row;
    if (k.bucket == "backward") ++backward;
    if (k.bucket == "b1.q64.k64") ++tuned;
    if (k.target.find("cuda") != std::string::npos) ++cuda;
  }
  // Every spec (the 5 backward specs' .lse forwards among them, 4 of them
  // new) for avx2, host and CUDA, but the paged and 8-bit caches and the
  // modifier (6 specs) on CUDA; the three f16 specs' tensor-core generic
  // kernels on CUDA (one with lse) have an unaligned fallback, a generic
  // kernel too.
  EXPECT_EQ(generic, 19 * 3 - 6 + 3);
  EXPECT_EQ(short_queries, 19 * 3 - 6);
  // The CPU one-row kernels of the specs whose decoder tiles hold more than
  // one query's rows: the five MHA specs and the two groups of 2 heads.
  EXPECT_EQ(one_row, 7 * 2);
  // The 5 backward specs' backward kernels (one with dBias) for avx2, host and CUDA.
  EXPECT_EQ(backward, 5 * 3);
  // The two correct x86 records for avx2 and host, and the CUDA one; the
  // wrong one never.
  EXPECT_EQ(tuned, 5);
  EXPECT_EQ(cuda, 13 * 2 + 3 + 1 + 5);
  EXPECT_EQ(layers, 3 * 2);  // three layers for avx2 and host; layers have no CUDA kernels
}

// window8_4 has a kernel of its own (a tuned record; emit serves untuned
// window specs by the `window` spec); every other window takes the kernel
// that is given its sizes per call, on the CPU and on CUDA alike.
TEST(Runtime, AWindowWithoutItsOwnKernelRunsTheOneTakingItPerCall) {
  const AttentionSpec own = AttentionSpec::parse("window8_4.br.kpad.mha2.d32.f16");
  AttentionCase compiled(own, {2, 9, 40});
  RuntimeCall compiled_call(own, compiled);
  KernelChoice choice;
  ASSERT_TRUE(choose_kernel(compiled_call.q, compiled_call.k, compiled_call.v, compiled_call.out,
                            compiled_call.options, &choice)
                  .ok());
  EXPECT_EQ(choice.spec, "window8_4.br.kpad.mha2.d32.f16");

  const AttentionSpec per_call = AttentionSpec::parse("window.br.kpad.mha2.d32.f16");
  for (auto [left, right] : {std::pair{0, 0}, {5, 2}, {30, 0}, {100, 100}}) {
    AttentionCase c(per_call, {2, 9, 40});
    c.set_window(left, right);
    RuntimeCall call(per_call, c);
    ASSERT_TRUE(choose_kernel(call.q, call.k, call.v, call.out, call.options, &choice).ok());
    EXPECT_EQ(choice.spec, "window.br.kpad.mha2.d32.f16");
    const Status status = call.run();
    ASSERT_TRUE(status.ok()) << status.message;
    const Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << left << ", " << right << ": " << result.first_failure;
  }
}

TEST(Runtime, ASoftcapIsPartOfTheKernelsIdentity) {
  const AttentionSpec capped = AttentionSpec::parse("causal.softcap30.gqa8x2.d64.f32");
  CaseOptions large;
  large.input_magnitude = 40.0;  // logits well past the cap
  AttentionCase c(capped, {1, 20, 20}, large);
  RuntimeCall call(capped, c);
  ASSERT_TRUE(call.run().ok());
  EXPECT_TRUE(c.compare().ok);
  // Another cap has no kernel, and the message names the spec asked for.
  call.options.softcap = 50.0f;
  Status status = call.run();
  EXPECT_EQ(status.code, ErrorCode::no_kernel);
  EXPECT_NE(status.message.find("softcap50"), std::string::npos) << status.message;
  for (float bad : {-1.0f, NAN, INFINITY, 1e-6f, 1e7f}) {
    call.options.softcap = bad;
    status = call.run();
    EXPECT_EQ(status.code, ErrorCode::invalid_argument) << bad;
    EXPECT_NE(status.message.find("softcap"), std::string::npos) << status.message;
  }
}

TEST(Runtime, AHeadDimWithNoKernelIsNamed) {
  std::vector<float> q(1 * 2 * 3 * 80), kv(1 * 2 * 4 * 80), out(q.size());
  TensorView tq = TensorView::contiguous(q.data(), ElementType::f32, {1, 2, 3, 80});
  TensorView tk = TensorView::contiguous(kv.data(), ElementType::f32, {1, 2, 4, 80});
  TensorView tout = TensorView::contiguous(out.data(), ElementType::f32, {1, 2, 3, 80});
  Status status = attention(tq, tk, tk, tout);
  EXPECT_EQ(status.code, ErrorCode::no_kernel);
  EXPECT_NE(status.message.find("head dim 80"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("causal.gqa8x2.d64.f32"), std::string::npos) << status.message;
}

TEST(Runtime, CudaTensorsWithoutADeviceAreAClearError) {
  testing::CudaCausalCall call;
  KernelChoice choice;
  Status status = choose_kernel(call.q, call.kv, call.kv, call.out, call.options, &choice);
  if (status.ok()) GTEST_SKIP() << "a CUDA device is present: " << choice.function;
  EXPECT_EQ(status.code, ErrorCode::no_device);
  EXPECT_NE(status.message.find("CUDA"), std::string::npos) << status.message;
}

TEST(Runtime, AnEmptyBatchOrQueryIsANoOp) {
  std::vector<float> kv(2 * 2 * 5 * 64);
  AttentionOptions causal;
  causal.mask = MaskKind::causal;
  TensorView no_batch_q = TensorView::contiguous(nullptr, ElementType::f32, {0, 8, 3, 64});
  TensorView no_batch_kv = TensorView::contiguous(kv.data(), ElementType::f32, {0, 2, 5, 64});
  Status status = attention(no_batch_q, no_batch_kv, no_batch_kv, no_batch_q, causal);
  EXPECT_TRUE(status.ok()) << status.message;
  TensorView no_query = TensorView::contiguous(nullptr, ElementType::f32, {2, 8, 0, 64});
  TensorView kv_view = TensorView::contiguous(kv.data(), ElementType::f32, {2, 2, 5, 64});
  status = attention(no_query, kv_view, kv_view, no_query, causal);
  EXPECT_TRUE(status.ok()) << status.message;
}

TEST(Runtime, ConcurrentCallsFromEightThreadsAreCorrect) {
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      const AttentionSpec spec = AttentionSpec::parse(kPackageSpecs[t % 5]);
      for (int round = 0; round < 10; ++round) {
        CaseOptions options;
        options.seed = static_cast<uint32_t>(t * 100 + round);
        AttentionCase c(spec, {1 + t % 2, 5 + round, 9 + 3 * t}, options);
        RuntimeCall call(spec, c);
        if (!call.run().ok() || !c.compare().ok) ++failures[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(Runtime, OneThreadGivesTheSameResults) {
  set_num_threads(1);
  expect_matches_reference("causal.gqa8x2.d64.f32", {2, 33, 47});
  set_num_threads(0);
}

// Each runs in a child process: the runtime chooses Halide's allocator once
// per process.
TEST(Runtime, KernelsTakeTheirMemoryFromKernelMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        expect_matches_reference("causal.gqa8x2.d64.f32", {1, 64, 64});
        void* block = halide_malloc(nullptr, size_t{1} << 20);
        const bool owned = kernel_memory_owns(block);
        halide_free(nullptr, block);
        std::exit(owned && !::testing::Test::HasFailure() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

std::atomic<int> application_allocations{0};
void* application_malloc(void* user_context, size_t bytes) {
  ++application_allocations;
  return halide_default_malloc(user_context, bytes);
}

TEST(Runtime, AnApplicationsOwnHalideAllocatorIsKept) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        halide_set_custom_malloc(application_malloc);
        expect_matches_reference("causal.gqa8x2.d64.f32", {1, 64, 64});
        const bool kept = application_allocations > 0;
        void* block = halide_malloc(nullptr, size_t{1} << 20);
        const bool owned = kernel_memory_owns(block);
        halide_free(nullptr, block);
        std::exit(kept && !owned && !::testing::Test::HasFailure() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace attnforge::testing
