// CUDA schedules without a GPU: the knob checks, the CUDA space, and the
// launches Halide lowers them to (threads and shared memory per block)
// against what the checks work out before compiling.
#include <gtest/gtest.h>

#include <random>

#include "generators/cuda_launches.h"
#include "generators/jit_compile.h"
#include "schedules/cuda_limits.h"
#include "schedules/presets.h"
#include "schedules/space.h"

namespace attnforge::schedules {
namespace {

const Halide::Target kCuda("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");

std::string misfit(const Schedule& s, const std::string& spec) {
  auto error = check(s, AttentionSpec::parse(spec), kCuda);
  return error ? error->field() : "(fits)";
}

TEST(CudaSchedule, PresetsFitEveryHeadDimUpTo128) {
  for (const std::string& name : presets_for(kCuda)) {
    for (const char* spec : {"full.mha8.d64.f32", "causal.gqa8x2.d128.f16",
                             "window8_8.mha2.d32.f32", "window8_8.kpad.mha2.d32.f32"}) {
      // A thread's registers hold a row of head dim 128 with the K row of
      // one key, not of a block of 4.
      const Schedule s = load_preset(name);
      const bool d128 = AttentionSpec::parse(spec).head_dim == 128;
      const bool rows = s.form == Form::online_rows;
      const char* expected = rows && d128 && s.key_block > 1 ? "key_block" : "(fits)";
      // The tensor-core form takes f16 and bf16, head dims in steps of 32.
      if (s.form == Form::online_mma) {
        const AttentionSpec parsed = AttentionSpec::parse(spec);
        expected = parsed.dtype == DType::f32 ? "dtype" : "(fits)";
      }
      EXPECT_EQ(misfit(s, spec), expected) << name << " " << spec;
    }
  }
  EXPECT_EQ(presets_for(kCuda).size(), 8u);
  for (const char* spec : {"causal.gqa8x2.d128.bf16", "full.mha8.d64.f16", "full.mha2.d32.bf16"}) {
    EXPECT_EQ(misfit(load_preset("online_mma_cuda"), spec), "(fits)") << spec;
  }
}

// bf16 goes to the tensor-core form only; its misfits name their knob.
TEST(CudaSchedule, TheTensorCoreFormNamesItsMisfits) {
  const Schedule mma = load_preset("online_mma_cuda");
  const struct {
    Schedule schedule;
    const char* spec;
    const char* expected;
  } cases[] = {
      {mma, "full.mha8.d64.f32", "dtype"},
      {mma, "full.mha8.d48.f16", "form"},  // not a multiple of 32
      {with_knob(mma, "query_tile", 48), "full.mha8.d64.f16", "query_tile"},
      {with_knob(mma, "key_block", 128), "full.mha8.d64.f16", "key_block"},
      // Two 16-row tiles of D128 per lane spill; of D96, with blocks of 64.
      {with_knob(with_knob(mma, "query_tile", 32), "key_block", 32), "full.mha8.d128.bf16",
       "query_tile"},
      {with_knob(mma, "query_tile", 32), "full.mha8.d64.bf16", "(fits)"},
      {with_knob(with_knob(mma, "query_tile", 32), "key_block", 64), "full.mha8.d96.bf16",
       "key_block"},
      {with_knob(mma, "gpu_threads_x", 16), "full.mha8.d64.f16", "gpu_threads_x"},
      {with_knob(mma, "gpu_threads_y", 8), "full.mha8.d64.f16", "gpu_threads_y"},
      {with_knob(mma, "kv_splits", 2), "full.mha8.d64.f16", "kv_splits"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(misfit(c.schedule, c.spec), c.expected) << c.spec << " " << c.schedule.to_json();
  }
  const Halide::Target opencl("x86-64-linux-avx-avx2-fma-opencl");
  EXPECT_EQ(check_spec_on_target(AttentionSpec::parse("full.mha8.d64.bf16"), opencl)->field(),
            "dtype");
  EXPECT_FALSE(check_spec_on_target(AttentionSpec::parse("full.mha8.d64.bf16"), kCuda));
  EXPECT_FALSE(check_spec_on_target(AttentionSpec::parse("full.mha8.d64.bf16.lse"), kCuda));
  EXPECT_FALSE(check_spec_on_target(AttentionSpec::parse("full.mha8.d64.f16.lse"), kCuda));
  EXPECT_EQ(check_spec_on_target(AttentionSpec::parse("full.mha8.d64.f32.kv8"), kCuda)->field(),
            "kv_storage");
  EXPECT_EQ(check_spec_on_target(AttentionSpec::parse("full.mha8.d64.f32.kvfp8"), kCuda)->field(),
            "kv_storage");
}

TEST(CudaSchedule, MisfitsNameTheKnob) {
  const Schedule online = load_preset("online_cuda");
  EXPECT_EQ(misfit(online, "full.mha8.d64.bf16"), "dtype");
  EXPECT_EQ(misfit(online, "full.mha8.d64.f32.weights"), "form");
  // A row's lse comes from every form, the tensor-core one too.
  EXPECT_EQ(misfit(online, "causal.mha8.d64.f32.lse"), "(fits)");
  EXPECT_EQ(misfit(load_preset("online_rows_cuda"), "causal.mha8.d64.f32.lse"), "(fits)");
  EXPECT_EQ(misfit(load_preset("online_mma_cuda"), "causal.mha8.d64.f16.lse"), "(fits)");
  EXPECT_EQ(misfit(load_preset("online_mma_cuda"), "causal.mha8.d64.bf16.lse"), "(fits)");
  Schedule s = online;
  s.form = Form::fused;
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "form");
  s = online;
  s.gpu_threads_x = 64;
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "gpu_threads_x");
  s = online;
  s.gpu_threads_x = 32;
  s.gpu_threads_y = 64;  // 2048 threads
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "gpu_threads_y");
  s = online;
  s.gpu_threads_x = 32;  // a head dim of 16 over 32 lanes
  EXPECT_EQ(misfit(s, "full.mha8.d16.f32"), "gpu_threads_x");
  s = online;
  s.query_tile = 64;
  s.key_block = 64;  // 64 x 128 running state alone is 128 KiB
  EXPECT_EQ(misfit(s, "full.mha8.d128.f32"), "query_tile");
  Schedule unfused = load_preset("materialized_cuda");
  unfused.query_tile = 8;  // fewer rows than the block's 16 threads along them
  unfused.gpu_threads_y = 16;
  EXPECT_EQ(misfit(unfused, "full.mha8.d64.f32"), "query_tile");
  unfused = load_preset("materialized_cuda");
  unfused.key_block = 64;
  unfused.gpu_stage_kv = false;
  unfused.query_tile = 256;
  unfused.gpu_threads_y = 2;  // 128 rows x 4 keys of q.k accumulators per thread
  EXPECT_EQ(misfit(unfused, "full.mha8.d64.f32"), "gpu_threads_y");
  unfused = load_preset("materialized_cuda");
  unfused.key_block = 128;  // staged K and Q rows: 128 x (128 + 32) floats
  EXPECT_EQ(misfit(unfused, "full.mha8.d128.f32"), "query_tile");
  s = online;
  s.kv_splits = 16;
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "kv_splits");
  s = online;
  s.gpu_threads_y = 2;  // 8 rows x 4 lanes of 64 per thread
  s.query_tile = 16;
  s.gpu_threads_x = 16;
  s.key_block = 512;                                        // 32 keys x 8 rows of q.k accumulators
  EXPECT_EQ(misfit(s, "full.mha1.d64.f32"), "query_tile");  // shared memory first
}

TEST(CudaSchedule, OneWarpBlocksNameWhatTheyCannotDo) {
  const Schedule warp = load_preset("online_warp_cuda");
  ASSERT_TRUE(cuda_warp_block(warp));
  EXPECT_EQ(misfit(warp, "full.mha8.d64.f32"), "(fits)");
  Schedule s = warp;
  s.kv_splits = 2;  // each split's state in the lanes of its own block
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "(fits)");
  s = warp;
  s.query_tile = 64;  // more rows than lanes to reduce them
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "query_tile");
  s = warp;
  s.query_tile = 32;  // 3 x 32 x 2 state values and 32 x 4 q.k accumulators per lane
  EXPECT_EQ(misfit(s, "full.mha8.d64.f32"), "gpu_threads_y");
  const Halide::Target opencl("x86-64-linux-avx-avx2-fma-opencl");
  auto error = check(warp, AttentionSpec::parse("full.mha8.d64.f32"), opencl);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field(), "gpu_threads_y");
}

TEST(CudaSchedule, SpaceHoldsOnlyLegalGpuSchedules) {
  ScheduleSpace space(AttentionSpec::parse("causal.mha8.d64.f16"), kCuda);
  const std::vector<Schedule> all = space.enumerate();
  ASSERT_GT(all.size(), 50u);
  bool online = false, materialized = false;
  for (const Schedule& s : all) {
    EXPECT_TRUE(is_gpu_schedule(s));
    EXPECT_EQ(misfit(s, "causal.mha8.d64.f16"), "(fits)") << s.to_json().dump();
    online = online || s.form == Form::online;
    materialized = materialized || s.form == Form::materialized;
  }
  EXPECT_TRUE(online && materialized);
  std::mt19937 rng(3);
  EXPECT_TRUE(space.contains(space.sample(rng)));
}

// What Halide launches: every kernel at the schedule's threads per block,
// and the online kernel's shared memory within the estimate and the limit.
TEST(CudaSchedule, LaunchesMatchTheChecks) {
  for (const char* spec : {"full.mha8.d64.f32", "causal.br.kpad.gqa8x2.d128.f16",
                           "window16_16.kpad.alibi.mha2.d32.f32"}) {
    for (const std::string& name : presets_for(kCuda)) {
      const Schedule s = load_preset(name);
      if (check(s, AttentionSpec::parse(spec), kCuda)) continue;  // a misfit, tested above
      const std::vector<CudaLaunch> launches = cuda_launches(spec, name, kCuda);
      ASSERT_FALSE(launches.empty()) << name;
      const int head_dim = AttentionSpec::parse(spec).head_dim;
      for (const CudaLaunch& launch : launches) {
        EXPECT_LE(launch.threads, s.gpu_threads_x * s.gpu_threads_y) << launch.kernel;
        ASSERT_TRUE(launch.shared_bytes.has_value()) << launch.kernel;
        EXPECT_LE(*launch.shared_bytes, cuda_shared_bytes(s, head_dim)) << launch.kernel;
        EXPECT_LE(*launch.shared_bytes, kCudaMaxSharedBytes) << launch.kernel;
      }
      if (s.form == Form::online_rows) {
        // Registers and L1 only; with key splits, the splits' states and their merge.
        ASSERT_EQ(launches.size(), s.kv_splits > 1 ? 2u : 1u);
        EXPECT_EQ(launches[0].threads, s.gpu_threads_x * s.gpu_threads_y);
        EXPECT_EQ(*launches[0].shared_bytes, 0);
      } else if (s.form == Form::online_mma) {
        ASSERT_EQ(launches.size(), 2u);  // the V^T pre-pass, then the attention
        EXPECT_EQ(launches[1].threads, s.gpu_threads_x * s.gpu_threads_y);
      } else if (s.form == Form::online && s.kv_splits > 1) {
        ASSERT_EQ(launches.size(), 2u);  // the splits' states, then their merge
      } else if (s.form == Form::online) {
        ASSERT_EQ(launches.size(), 1u);  // one fused kernel
        EXPECT_EQ(launches[0].threads, s.gpu_threads_x * s.gpu_threads_y);
        EXPECT_GT(*launches[0].shared_bytes, cuda_shared_bytes(s, head_dim) * 3 / 4);
      }
    }
  }
}

// Every f16 output is converted before it is stored: Halide 21's PTX backend
// drops the conversion of a vector f16 store, storing pieces of the f32 bits.
TEST(CudaSchedule, F16OutputsAreConvertedBeforeTheyAreStored) {
  for (const std::string& name : presets_for(kCuda)) {
    const std::string ptx = cuda_ptx("causal.gqa8x2.d64.f16", name, kCuda);
    ASSERT_FALSE(ptx.empty()) << name;
    EXPECT_NE(ptx.find("cvt.rn.f16.f32"), std::string::npos) << name;
  }
}

TEST(CudaLaunches, ParsesConstantAndRunTimeSharedSizes) {
  const std::string stmt =
      R"stmt(halide_cuda_run(cuda[0], "_kernel_a", t1, 8, q.extent.3, 16, 8, 1, 0 + (6160*4), (void *)x)
         halide_cuda_run(cuda[0], "_kernel_b", t2, 1, 1, 128, 1, 1, t378*4, (void *)y))stmt";
  const std::vector<CudaLaunch> launches = parse_cuda_launches(stmt);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].kernel, "_kernel_a");
  EXPECT_EQ(launches[0].threads, 128);
  EXPECT_EQ(launches[0].shared_bytes, 24640);
  EXPECT_EQ(launches[1].threads, 128);
  EXPECT_FALSE(launches[1].shared_bytes.has_value());
}

TEST(CudaLaunches, ParsesPtxasReports) {
  const std::string report = R"ptxas(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_kernel_out_s0' for 'sm_80'
ptxas info    : Function properties for _kernel_out_s0
    8 bytes stack frame, 12 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 63 registers, used 1 barriers, 452 bytes cmem[0]
ptxas info    : Compiling entry function '_kernel_b' for 'sm_80'
ptxas info    : Function properties for _kernel_b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 0 barriers)ptxas";
  const auto kernels = parse_ptxas_report(report);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels.at("_kernel_out_s0"), std::make_pair(63, 16));
  EXPECT_EQ(kernels.at("_kernel_b"), std::make_pair(18, 0));
}

// Limited by shared memory (7 blocks of 4 warps), by registers (255 per
// thread: 2 blocks of 4 warps), by warps (one 1024-thread block... two).
TEST(CudaOccupancy, TakesTheTightestLimit) {
  EXPECT_DOUBLE_EQ(cuda_occupancy(128, 63, 20544), 28.0 / 64);
  EXPECT_DOUBLE_EQ(cuda_occupancy(128, 255, 0), 8.0 / 64);
  EXPECT_DOUBLE_EQ(cuda_occupancy(1024, 32, 0), 1.0);
  EXPECT_DOUBLE_EQ(cuda_occupancy(4096, 32, 0), 0.0);
}

// The presets as ptxas assembles them (skipped without the CUDA toolkit), at
// the largest head dim each takes.
TEST(CudaLaunches, PresetsAssembleWithoutSpills) {
  for (const std::string& name : presets_for(kCuda)) {
    std::string spec = "causal.gqa8x2.d128.f16";
    if (misfit(load_preset(name), spec) != "(fits)") spec = "causal.gqa8x2.d64.f16";
    std::vector<CudaKernelResources> kernels;
    try {
      kernels = cuda_kernel_resources(spec, name, kCuda);
    } catch (const KernelError& error) {
      if (std::string(error.what()).find("ptxas not found") != std::string::npos) {
        GTEST_SKIP() << error.what();
      }
      throw;
    }
    ASSERT_FALSE(kernels.empty()) << name;
    for (const CudaKernelResources& k : kernels) {
      EXPECT_GT(k.registers, 0) << name << " " << k.launch.kernel;
      EXPECT_EQ(k.spill_bytes, 0) << name << " " << k.launch.kernel;
      EXPECT_GT(cuda_occupancy(k.launch.threads, k.registers, k.launch.shared_bytes.value_or(0)),
                0.1)
          << name << " " << k.launch.kernel;
    }
  }
}

}  // namespace
}  // namespace attnforge::schedules
