// The GPU row form of the backward pass: it compiles for CUDA without a GPU,
// and runs on every GPU target this machine has (a CUDA device; an OpenCL
// device, pocl on the CPU, runs the same GPU loops, f32 and bf16 as its bits)
// against the double reference's gradients: every mask, GQA/MQA, softcap, odd sizes,
// L = 1, Lq != Lk and lengths over several blocks. The gradients also come
// from the GPU forward's own out and lse. Misfit knobs are named.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "generators/jit_attention.h"
#include "generators/jit_attention_backward.h"
#include "schedules/backward_schedule.h"
#include "schedules/schedule_check.h"
#include "tests/support/backward_case.h"

namespace attnforge::testing {
namespace {

using Halide::Target;
using schedules::BackwardSchedule;

const Target kCuda =
    Halide::get_host_target().with_feature(Target::CUDA).with_feature(Target::CUDACapability80);
const Target kOpenCl = Halide::get_host_target().with_feature(Target::OpenCL);

constexpr std::initializer_list<CaseShape> kShapes = {{1, 1, 1},  {2, 7, 33},   {3, 19, 12},
                                                      {1, 1, 40}, {1, 130, 67}, {1, 67, 130}};

void copy_to_host(halide_buffer_t* buffer) {
  if (buffer && buffer->device && buffer->device_interface) {
    ASSERT_EQ(buffer->device_interface->copy_to_host(nullptr, buffer), 0);
  }
}

void expect_gradients(BackwardCase& c, const std::string& what) {
  for (halide_buffer_t* gradient :
       {c.arguments().dq, c.arguments().dk, c.arguments().dv, c.arguments().d_bias}) {
    copy_to_host(gradient);
  }
  const Comparison result = c.compare();
  EXPECT_TRUE(result.ok) << what << ": " << result.first_failure << " (max error "
                         << result.max_error << ")";
}

// Runs `kernel` on every shape in both layouts against the reference. False
// when no device for its target runs it here.
bool runs_correctly(const JitAttentionBackward& kernel, const std::string& spec_text,
                    std::initializer_list<CaseShape> shapes, std::string* why_not) {
  for (CaseShape shape : shapes) {
    for (Layout layout : {Layout::bhld, Layout::blhd}) {
      BackwardCase c(kernel.spec(), shape, {.layout = layout, .seed = 11});
      try {
        kernel.run(c.arguments());
      } catch (const KernelError& error) {
        *why_not = error.what();
        return false;
      }
      expect_gradients(
          c, fmt::format("{} B{} Lq{} Lk{}", spec_text, shape.batch, shape.q_len, shape.kv_len));
    }
  }
  return true;
}

// Compiles for CUDA, then runs on each GPU target with a device here: CUDA,
// and OpenCL for f32 and bf16 (pocl has no f16).
void expect_rows_match_reference(const std::string& spec_text, const std::string& schedule,
                                 std::initializer_list<CaseShape> shapes = kShapes) {
  const AttentionSpec spec = AttentionSpec::parse(spec_text);
  const std::map<std::string, std::string> params = {{"schedule", schedule}};
  std::vector<Target> targets = {kCuda};
  const bool on_pocl = spec.dtype != DType::f16;
  if (on_pocl) targets.push_back(kOpenCl);
  int ran = 0;
  std::string why_not;
  for (const Target& target : targets) {
    std::unique_ptr<JitAttentionBackward> kernel;
    ASSERT_NO_THROW(kernel = std::make_unique<JitAttentionBackward>(spec, target, params))
        << spec_text << " on " << target.to_string();
    ran += runs_correctly(*kernel, spec_text, shapes, &why_not);
  }
  if (ran == 0 && on_pocl) GTEST_SKIP() << "no GPU device here: " << why_not;
}

TEST(BackwardGpuSchedule, MasksMatchTheReference) {
  for (const char* spec :
       {"full.mha2.d32.f32", "causal.mha2.d32.f32", "causal.br.kpad.mha2.d32.f32",
        "window5_2.mha2.d16.f32", "window.mha2.d16.f32"}) {
    expect_rows_match_reference(spec, "backward_rows_gpu");
  }
}

TEST(BackwardGpuSchedule, GroupedHeadsAndAdditiveTermsMatchTheReference) {
  for (const char* spec :
       {"causal.gqa8x2.d64.f32", "full.kpad.mqa4.d16.f32", "causal.alibi.gqa4x2.d16.f32",
        "full.bias.mha2.d16.f32", "causal.br.softcap5.gqa4x2.d32.f32", "causal.gqa4x2.d64.f16"}) {
    expect_rows_match_reference(spec, "backward_rows_gpu");
  }
}

// bf16 travels as its bits: widened to f32 on load, gradients rounded to
// nearest even on the integer bits.
TEST(BackwardGpuSchedule, Bf16AsItsBitsMatchesTheReference) {
  for (const char* spec : {"causal.br.kpad.gqa4x2.d32.bf16", "full.bias.mqa4.d32.bf16",
                           "window5_2.alibi.softcap5.mha2.d16.bf16"}) {
    expect_rows_match_reference(spec, "backward_rows_gpu");
  }
}

// dBias: a thread per (query, key) entry, with every mask and broadcast
// shapes of the bias; bf16 as its bits.
TEST(BackwardGpuSchedule, BiasGradientsMatchTheReference) {
  for (const char* spec :
       {"full.bias.mqa4.d32.f32.dbias", "causal.br.kpad.bias.gqa4x2.d64.f32.dbias",
        "window5_2.bias.softcap5.mha2.d16.f32.dbias", "causal.bias.mha2.d128.bf16.dbias"}) {
    expect_rows_match_reference(spec, "backward_rows_gpu", {{1, 1, 1}, {2, 7, 33}, {1, 67, 130}});
  }
}

// Head dims past 64 split a key row's dK and dV sums across threads: 2 of
// 64 at 128, 2 of 48 at 96, 3 of 55 and 54 at 164 (a guarded last part).
TEST(BackwardGpuSchedule, WideHeadsSplitAcrossThreadsMatchTheReference) {
  for (const char* spec : {"causal.br.kpad.gqa4x2.d128.f32", "full.mha2.d96.f32",
                           "window7_3.alibi.mha1.d164.f32", "causal.mqa2.d128.bf16"}) {
    expect_rows_match_reference(spec, "backward_rows_gpu", {{1, 1, 1}, {2, 7, 33}, {1, 67, 130}});
  }
}

// Blocks of 64 and 128 threads.
TEST(BackwardGpuSchedule, OtherBlocksMatchTheReference) {
  for (auto [keys, queries] : {std::pair{64, 128}, {128, 64}}) {
    BackwardSchedule s = schedules::load_backward_preset("backward_rows_gpu");
    s.key_block = keys;
    s.query_block = queries;
    expect_rows_match_reference("causal.br.kpad.gqa4x2.d32.f32", s.to_json().dump(),
                                {{1, 1, 1}, {2, 45, 150}, {1, 150, 45}});
  }
}

// Training on the GPU: the GPU forward writes out and lse, the backward reads them.
TEST(BackwardGpuSchedule, GradientsFromTheGpuForwardsLse) {
  const AttentionSpec spec = AttentionSpec::parse("causal.br.kpad.gqa4x2.d32.f32");
  int ran = 0;
  for (const Target& target : {kCuda, kOpenCl}) {
    JitAttention forward(AttentionSpec::parse(spec.to_string() + ".lse"), target,
                         {{"schedule", "online_rows_cuda"}});
    JitAttentionBackward backward(spec, target, {{"schedule", "backward_rows_gpu"}});
    for (CaseShape shape : {CaseShape{2, 37, 101}, CaseShape{1, 70, 19}}) {
      BackwardCase c(spec, shape, {.seed = 5});
      try {
        forward.run(c.forward_arguments());
      } catch (const KernelError&) {
        break;  // no device for this target
      }
      copy_to_host(c.forward_arguments().out);
      copy_to_host(c.forward_arguments().lse);
      c.take_forward_outputs();
      backward.run(c.arguments());
      expect_gradients(c, fmt::format("{} B{} Lq{} Lk{}", target.to_string(), shape.batch,
                                      shape.q_len, shape.kv_len));
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "no GPU device here";
}

std::string misfit(const BackwardSchedule& s, const char* spec, const Target& target) {
  auto error = schedules::check_backward(s, AttentionSpec::parse(spec), target);
  return error ? error->field() : "(fits)";
}

TEST(BackwardGpuSchedule, MisfitKnobsAreNamed) {
  const BackwardSchedule rows = schedules::load_backward_preset("backward_rows_gpu");
  EXPECT_EQ(misfit(rows, "causal.mha8.d64.f32", kCuda), "(fits)");
  EXPECT_EQ(misfit(rows, "causal.mha8.d64.f16", kOpenCl), "(fits)");
  EXPECT_EQ(misfit(rows, "causal.mha8.d64.bf16", kCuda), "(fits)");
  EXPECT_EQ(misfit(rows, "full.bias.mha8.d64.f32.dbias", kCuda), "(fits)");
  EXPECT_EQ(misfit(rows, "full.bias.mha8.d256.f32.dbias", kCuda), "bias_grad");  // 64 KiB of rows
  EXPECT_EQ(misfit(rows, "causal.mha8.d64.f32", Halide::get_host_target()), "gpu");
  BackwardSchedule s = rows;
  s.key_block = 48;
  EXPECT_EQ(misfit(s, "causal.mha8.d64.f32", kCuda), "key_block");
  s = rows;
  s.query_block = 512;
  EXPECT_EQ(misfit(s, "causal.mha8.d64.f32", kCuda), "query_block");
  s = rows;
  s.key_block = 64;  // 64 KiB of K and V rows
  EXPECT_EQ(misfit(s, "causal.mha8.d128.f32", kCuda), "key_block");
  EXPECT_EQ(misfit(s, "causal.mha8.d64.f32", kCuda), "(fits)");
  s = rows;
  s.score_rows = 2;
  EXPECT_EQ(misfit(s, "causal.mha8.d64.f32", kCuda), "score_rows");
  const BackwardSchedule x86 = schedules::load_backward_preset("backward_avx2");
  EXPECT_EQ(misfit(x86, "causal.mha8.d64.f32", kCuda), "gpu");
  EXPECT_THROW(JitAttentionBackward(AttentionSpec::parse("causal.mha8.d64.f32"), kCuda,
                                    {{"schedule", "naive"}}),
               SpecError);
  // x86 schedules keep their JSON; the GPU form's says so.
  EXPECT_FALSE(x86.to_json().contains("gpu"));
  EXPECT_EQ(BackwardSchedule::from_json(rows.to_json()).gpu, 1);
}

}  // namespace
}  // namespace attnforge::testing
