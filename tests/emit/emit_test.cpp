// attnforge emit: the target list, the kernel plan drawn from a database, and
// a whole emission, which must give byte-identical sources for one database.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "autotune/subprocess.h"
#include "autotune/temp_dir.h"
#include "emit/emit_target.h"
#include "emit/kernel_plan.h"
#include "schedules/backward_schedule.h"
#include "schedules/schedule.h"

namespace attnforge::emit {
namespace {

using autotune::Record;
using autotune::Status;
using schedules::Schedule;

const char* const kAvx2 = "x86-64-linux-avx-avx2-f16c-fma-sse41";

Record record(const std::string& spec, const std::string& bucket, double ms, Status status,
              int vector_width = 8, int query_tile = 16) {
  Record r;
  r.spec = spec;
  r.target = kAvx2;
  r.bucket = bucket;
  r.status = status;
  r.ms_median = ms;
  r.schedule = {{"form", "fused"},
                {"query_tile", query_tile},
                {"key_block", 64},
                {"vector_width", vector_width},
                {"unroll", 1},
                {"register_rows", 4},
                {"register_vectors", 1},
                {"kv_splits", 1},
                {"intermediates", "tile"},
                {"skip_masked_blocks", true},
                {"parallel", {"batch", "heads", "query_tiles"}}};
  return r;
}

// A tuning database in `dir` holding `records`.
autotune::Database database_of(const autotune::TempDir& dir, const std::vector<Record>& records) {
  autotune::Database db(dir.path() / "tuning.jsonl");
  db.append(records);
  return db;
}

TEST(EmitTargets, AliasesAndHalideTargetsParse) {
  std::vector<EmitTarget> targets = parse_emit_targets("avx2,avx512,cuda");
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0].tag, "avx2");
  EXPECT_EQ(targets[0].rank, 8);
  EXPECT_EQ(targets[1].tag, "avx512");
  EXPECT_EQ(targets[1].rank, 16);
  EXPECT_TRUE(targets[2].cuda);
  EXPECT_EQ(targets[2].tag, "cuda80");
  EXPECT_TRUE(runtime_target(targets).has_feature(Halide::Target::CUDA));
  EXPECT_FALSE(runtime_target(targets).has_feature(Halide::Target::AVX2));
  EXPECT_EQ(parse_emit_targets(kAvx2)[0].tag, "avx2");
}

TEST(EmitTargets, UnknownDuplicateAndForeignTargetsAreRefused) {
  EXPECT_THROW(parse_emit_targets("avx3"), std::invalid_argument);
  EXPECT_THROW(parse_emit_targets(std::string("avx2,") + kAvx2), std::invalid_argument);
  EXPECT_THROW(parse_emit_targets("arm-64-linux"), std::invalid_argument);
  EXPECT_THROW(parse_emit_targets(""), std::invalid_argument);
}

TEST(KernelPlan, FastestCorrectRecordPerBucketPlusAGenericKernel) {
  const std::string spec = "causal.mha2.d32.f32";
  autotune::TempDir dir;
  const autotune::Database db = database_of(
      dir, {
               record(spec, "b1.q64.k64", 2.0, Status::ok),
               record(spec, "b1.q64.k64", 1.0, Status::ok, 8, 32),
               record(spec, "b1.q64.k64", 0.5, Status::wrong, 8, 64),  // never ships, however fast
               record(spec, "b1.q128.k128", 3.0, Status::ok, 16),      // 16 lanes do not fit AVX2
               record(spec, "../../escape", 0.1, Status::ok),          // not a bucket: ignored
           });
  KernelPlan plan = plan_kernels(db, parse_emit_targets("avx2"), {});
  ASSERT_EQ(plan.kernels.size(), 4u);
  EXPECT_EQ(plan.kernels[0].function, "attnforge_avx2_causal_mha2_d32_f32_generic");
  EXPECT_EQ(plan.kernels[0].schedule, "online_avx2");
  EXPECT_EQ(plan.kernels[1].function, "attnforge_avx2_causal_mha2_d32_f32_generic_q16");
  EXPECT_EQ(plan.kernels[1].schedule, "decode_avx2");
  EXPECT_EQ(plan.kernels[1].shape.q_len, 16);
  EXPECT_EQ(plan.kernels[3].function, "attnforge_avx2_causal_mha2_d32_f32_b1_q64_k64");
  EXPECT_EQ(plan.kernels[3].shape.kv_len, 64);
  EXPECT_NE(plan.kernels[3].origin.find("1.000 ms"), std::string::npos) << plan.kernels[3].origin;
}

// A bucket ships the fastest winner, of any CPU target, that fits the emit
// target; the competitors measured beside the schedules never ship.
TEST(KernelPlan, ABucketShipsTheFastestFittingWinnerOfACompatibleTarget) {
  const std::string spec = "causal.mha2.d32.f32", bucket = "b1.q64.k64";
  Record naive = record(spec, bucket, 0.1, Status::ok);
  naive.schedule = "naive";
  Record wide = record(spec, bucket, 0.5, Status::ok, 16);  // AVX-512's winner: 16 lanes
  wide.target = "x86-64-linux-avx-avx2-avx512-f16c-fma-sse41";
  Record gpu = record(spec, bucket, 0.2, Status::ok, 8, 32);
  gpu.target = "host-cuda-cuda_capability_80";
  autotune::TempDir dir;
  const autotune::Database db =
      database_of(dir, {naive, wide, gpu, record(spec, bucket, 1.0, Status::ok, 8, 64)});
  KernelPlan plan = plan_kernels(db, parse_emit_targets("avx2"), {});
  ASSERT_EQ(plan.kernels.size(), 4u);
  EXPECT_EQ(plan.kernels[3].bucket, bucket);
  EXPECT_NE(plan.kernels[3].schedule.find("\"query_tile\":64"), std::string::npos)
      << plan.kernels[3].schedule;
  plan = plan_kernels(db, parse_emit_targets("avx512"), {});
  ASSERT_EQ(plan.kernels.size(), 4u);
  EXPECT_NE(plan.kernels[3].origin.find("0.500 ms"), std::string::npos) << plan.kernels[3].origin;
}

// A cost model's estimate ships only for a bucket where nothing was
// measured, and its origin says so; a measurement wins its bucket however
// fast the estimates there.
TEST(KernelPlan, AnEstimateShipsOnlyWhereNothingWasMeasured) {
  const std::string spec = "causal.mha2.d32.f32";
  auto estimate = [&](const std::string& bucket, double ms, int query_tile) {
    Record r = record(spec, bucket, ms, Status::ok, 8, query_tile);
    r.estimate = true;
    return r;
  };
  autotune::TempDir dir;
  const autotune::Database db =
      database_of(dir, {estimate("b1.q64.k64", 0.5, 32), estimate("b1.q64.k64", 0.7, 64),
                        estimate("b1.q128.k128", 0.1, 32),
                        record(spec, "b1.q128.k128", 2.0, Status::ok, 8, 64)});
  KernelPlan plan = plan_kernels(db, parse_emit_targets("avx2"), {});
  ASSERT_EQ(plan.kernels.size(), 5u);
  EXPECT_EQ(plan.kernels[3].bucket, "b1.q128.k128");
  EXPECT_NE(plan.kernels[3].origin.find("tuned: 2.000 ms"), std::string::npos)
      << plan.kernels[3].origin;
  EXPECT_EQ(plan.kernels[4].bucket, "b1.q64.k64");
  EXPECT_NE(plan.kernels[4].origin.find("estimated: 0.500 ms"), std::string::npos)
      << plan.kernels[4].origin;
  EXPECT_NE(plan.kernels[4].origin.find("never run"), std::string::npos);
  EXPECT_NE(plan.kernels[4].schedule.find("\"query_tile\":32"), std::string::npos);
}

// bf16 on CUDA is the tensor-core form's: its generic kernels need aligned
// rows, and no preset takes unaligned bf16 rows there.
TEST(KernelPlan, ExtraSpecsGetGenericKernelsAndBf16TakesTensorCoresOnCuda) {
  autotune::TempDir dir;
  KernelPlan plan = plan_kernels(database_of(dir, {}), parse_emit_targets("avx2,cuda"),
                                 {AttentionSpec::parse("full.mha2.d32.bf16")});
  // generic and short-query generic, AVX2 and CUDA; AVX2's one-row kernel
  ASSERT_EQ(plan.kernels.size(), 5u);
  EXPECT_EQ(plan.kernels[0].bucket, "generic");
  EXPECT_EQ(plan.kernels[1].bucket, "generic.q16");
  EXPECT_EQ(plan.kernels[2].bucket, "generic.q1");
  EXPECT_EQ(plan.kernels[3].bucket, "generic");
  EXPECT_EQ(plan.kernels[3].schedule, "online_mma_cuda");
  EXPECT_EQ(plan.kernels[4].schedule, "online_mma_cuda");
  EXPECT_TRUE(plan.skipped.empty());
}

// An int8 cache's short-query kernels take q.k in int16 dot products on
// either ISA; an fp8 cache's keep the f32 decoders.
TEST(KernelPlan, Int8CachesDecodeWithInt16DotProducts) {
  autotune::TempDir dir;
  KernelPlan plan = plan_kernels(database_of(dir, {}), parse_emit_targets("avx2,avx512"),
                                 {AttentionSpec::parse("causal.br.gqa8x2.d64.bf16.kv8"),
                                  AttentionSpec::parse("causal.br.gqa8x2.d64.bf16.kvfp8")});
  std::vector<std::string> short_query;
  for (const PlannedKernel& k : plan.kernels) {
    if (k.bucket == "generic.q16") short_query.push_back(k.spec.to_string() + " " + k.schedule);
  }
  EXPECT_EQ(short_query,
            (std::vector<std::string>{"causal.br.gqa8x2.d64.bf16.kv8 decode_int16_avx2",
                                      "causal.br.gqa8x2.d64.bf16.kvfp8 decode_avx2",
                                      "causal.br.gqa8x2.d64.bf16.kv8 decode_int16_avx512",
                                      "causal.br.gqa8x2.d64.bf16.kvfp8 decode_avx512"}));
}

// Decoding computes one query row per head: where the short-query preset's
// tiles hold more rows than that (MHA: 4 queries; a group of 2 heads: 2
// queries), a q1 kernel ships the preset with tiles of one query's rows. A
// group of 4 heads fills the tiles already; CUDA keeps its short-query kernel.
TEST(KernelPlan, OneQueryRowShipsTilesOfOneQuery) {
  autotune::TempDir dir;
  KernelPlan plan = plan_kernels(database_of(dir, {}), parse_emit_targets("avx512,cuda"),
                                 {AttentionSpec::parse("causal.br.mha4.d64.bf16.kv8"),
                                  AttentionSpec::parse("causal.br.gqa8x4.d64.f32"),
                                  AttentionSpec::parse("causal.br.gqa8x2.d64.f32")});
  std::map<std::string, Schedule> one_row;
  for (const PlannedKernel& k : plan.kernels) {
    if (k.bucket != "generic.q1") continue;
    EXPECT_EQ(k.shape.q_len, 1);
    EXPECT_EQ(k.shape.batch + k.shape.kv_len, 0);
    EXPECT_NE(k.origin.find("preset decode_"), std::string::npos) << k.origin;
    one_row.emplace(k.spec.to_string(), Schedule::from_json(nlohmann::json::parse(k.schedule)));
  }
  ASSERT_EQ(one_row.size(), 2u);
  const Schedule& mha = one_row.at("causal.br.mha4.d64.bf16.kv8");
  EXPECT_EQ(mha.query_tile, 1);
  EXPECT_EQ(mha.register_rows, 1);
  EXPECT_EQ(schedules::effective_pv_rows(mha), 1);
  EXPECT_TRUE(mha.int16_dots);
  const Schedule& pairs = one_row.at("causal.br.gqa8x4.d64.f32");
  EXPECT_EQ(pairs.query_tile, 2);
  EXPECT_TRUE(pairs.group_heads);
}

// --backward: each spec's backward kernel on CPU targets under the backward
// preset of the target's lanes (the AVX2 one where the head dim has no
// 16-lane vectors), on CUDA under the GPU row form where it takes the spec
// (dBias at head dim 256 it does not: skipped, saying why), and its .lse
// forward; specs without a backward refused.
TEST(KernelPlan, BackwardSpecsShipTheirBackwardAndTheirLseForward) {
  autotune::TempDir dir;
  KernelPlan plan =
      plan_kernels(database_of(dir, {}), parse_emit_targets("avx2,avx512,cuda"), {}, {},
                   {AttentionSpec::parse("causal.br.kpad.gqa8x2.d64.f32.lse"),
                    AttentionSpec::parse("full.mha2.d40.bf16"),
                    AttentionSpec::parse("full.bias.mha2.d256.f32.dbias")});
  std::map<std::string, std::string> backward;  // function: schedule
  std::set<std::string> forward;
  for (const PlannedKernel& k : plan.kernels) {
    if (k.backward) {
      EXPECT_EQ(k.bucket, "backward");
      EXPECT_FALSE(k.spec.return_lse);
      backward.emplace(k.function, k.schedule);
    } else if (k.bucket == "generic") {
      forward.insert(k.spec.to_string());
    }
  }
  EXPECT_EQ(backward,
            (std::map<std::string, std::string>{
                {"attnforge_avx2_causal_br_kpad_gqa8x2_d64_f32_backward", "backward_avx2"},
                {"attnforge_avx512_causal_br_kpad_gqa8x2_d64_f32_backward", "backward_avx512"},
                {"attnforge_avx2_full_mha2_d40_bf16_backward", "backward_avx2"},
                {"attnforge_avx512_full_mha2_d40_bf16_backward", "backward_avx2"},
                {"attnforge_avx2_full_bias_mha2_d256_f32_dbias_backward", "backward_avx2"},
                {"attnforge_avx512_full_bias_mha2_d256_f32_dbias_backward", "backward_avx512"},
                {"attnforge_cuda80_causal_br_kpad_gqa8x2_d64_f32_backward", "backward_rows_gpu"},
                {"attnforge_cuda80_full_mha2_d40_bf16_backward", "backward_rows_gpu"}}));
  const std::string dbias_on_cuda =
      "full.bias.mha2.d256.f32.dbias backward on cuda80: schedule: bias_grad:";
  ASSERT_EQ(std::count_if(plan.skipped.begin(), plan.skipped.end(),
                          [&](const std::string& why) { return why.rfind(dbias_on_cuda, 0) == 0; }),
            1)
      << fmt::format("{}", fmt::join(plan.skipped, "\n"));
  EXPECT_EQ(forward,
            (std::set<std::string>{"causal.br.kpad.gqa8x2.d64.f32.lse", "full.mha2.d40.bf16.lse",
                                   "full.bias.mha2.d256.f32.lse"}));
  EXPECT_THROW(plan_kernels(database_of(dir, {}), parse_emit_targets("avx2"), {}, {},
                            {AttentionSpec::parse("causal.br.kpad.page16.gqa8x2.d64.f32")}),
               SpecError);
}

// A backward record the tuner wrote ships, for --backward specs only, as
// that bucket's backward kernel next to the preset's; forward plans never
// see it.
TEST(KernelPlan, TunedBackwardRecordsShipAsTheirBucketsBackwardKernel) {
  autotune::TempDir dir;
  Record tuned;
  tuned.spec = "causal.mha2.d32.f32";
  tuned.target = kAvx2;
  tuned.bucket = "b1.q256.k256";
  tuned.status = Status::ok;
  tuned.ms_median = 1.0;
  tuned.backward = true;
  schedules::BackwardSchedule s = schedules::load_backward_preset("backward_avx2");
  s.key_block = 32;
  tuned.schedule = s.to_json();
  const autotune::Database db = database_of(dir, {tuned});
  const AttentionSpec spec = AttentionSpec::parse("causal.mha2.d32.f32");
  KernelPlan with = plan_kernels(db, parse_emit_targets("avx2"), {}, {}, {spec});
  std::map<std::string, std::string> backward;  // bucket: schedule
  for (const PlannedKernel& k : with.kernels) {
    if (k.backward) backward.emplace(k.bucket, k.schedule);
  }
  ASSERT_EQ(backward.size(), 2u);
  EXPECT_EQ(backward.at("backward"), "backward_avx2");
  EXPECT_EQ(nlohmann::json::parse(backward.at("b1.q256.k256")), s.to_json());
  KernelPlan without = plan_kernels(db, parse_emit_targets("avx2"), {spec});
  for (const PlannedKernel& k : without.kernels) {
    EXPECT_FALSE(k.backward);
    EXPECT_EQ(k.bucket.rfind("b1.", 0), std::string::npos) << k.function;  // no tuned forward
  }
}

// f16 on CUDA: the tensor-core generic kernel, and for rows it cannot take
// (not 16-byte aligned) the SIMT online form.
TEST(KernelPlan, TensorCoreKernelsShipWithAnUnalignedFallback) {
  autotune::TempDir dir;
  KernelPlan plan = plan_kernels(database_of(dir, {}), parse_emit_targets("cuda"),
                                 {AttentionSpec::parse("causal.gqa4x2.d64.f16")});
  ASSERT_EQ(plan.kernels.size(), 3u);
  EXPECT_EQ(plan.kernels[0].bucket, "generic");
  EXPECT_EQ(plan.kernels[0].schedule, "online_mma_cuda");
  EXPECT_EQ(plan.kernels[1].bucket, "generic.unaligned");
  EXPECT_EQ(plan.kernels[1].schedule, "online_cuda");
  EXPECT_EQ(plan.kernels[2].bucket, "generic.q16");
  EXPECT_EQ(plan.kernels[2].schedule, "online_split_cuda");
}

// Window specs with no tuned kernel ship as the one spec taking its window
// per call; one with a tuned record keeps its own kernels.
TEST(KernelPlan, UntunedWindowsShipAsTheWindowGivenPerCall) {
  const std::string tuned = "window9_3.mha2.d32.f32";
  autotune::TempDir dir;
  KernelPlan plan =
      plan_kernels(database_of(dir, {record(tuned, "b1.q64.k64", 1.0, Status::ok)}),
                   parse_emit_targets("avx2,cuda"),
                   {AttentionSpec::parse("window4_0.mha2.d32.f32"),
                    AttentionSpec::parse("window16_16.mha2.d32.f32"), AttentionSpec::parse(tuned)});
  std::map<std::string, int> kernels_per_spec;
  for (const PlannedKernel& k : plan.kernels) ++kernels_per_spec[k.spec_text()];
  EXPECT_EQ(kernels_per_spec.size(), 2u);
  // generic and short-query, two targets, and AVX2's one-row kernel
  EXPECT_EQ(kernels_per_spec["window.mha2.d32.f32"], 5);
  EXPECT_EQ(kernels_per_spec[tuned], 6);  // and the AVX2 tuned kernel
  ASSERT_EQ(plan.served_by_other.size(), 2u);
  EXPECT_NE(plan.served_by_other[0].find("window4_0.mha2.d32.f32: no tuned kernel; served by "
                                         "window.mha2.d32.f32"),
            std::string::npos)
      << plan.served_by_other[0];
  for (const PlannedKernel& k : plan.kernels) {
    if (k.spec.run_time_window) EXPECT_EQ(k.spec.window_left + k.spec.window_right, 0);
  }
}

TEST(KernelPlan, LayersShipAGenericAndTheirTunedKernelsOnCpusOnly) {
  const std::string layer = "self.dm64.causal.mha2.d32.f32";
  autotune::TempDir dir;
  KernelPlan plan = plan_kernels(
      database_of(dir, {record(layer, "b1.q64.k64", 1.0, Status::ok),
                        record(layer, "b1.q64.k64", 0.5, Status::wrong, 8, 32)}),
      parse_emit_targets("avx2,cuda"), {}, {LayerSpec::parse("cross.dm32.full.mha2.d16.f32")});
  ASSERT_EQ(plan.kernels.size(), 3u);  // no short-query kernel for layers
  EXPECT_EQ(plan.kernels[0].function, "attnforge_avx2_cross_dm32_full_mha2_d16_f32_generic");
  EXPECT_EQ(plan.kernels[1].function, "attnforge_avx2_self_dm64_causal_mha2_d32_f32_generic");
  EXPECT_EQ(plan.kernels[1].schedule, "online_avx2");
  EXPECT_EQ(plan.kernels[2].function, "attnforge_avx2_self_dm64_causal_mha2_d32_f32_b1_q64_k64");
  EXPECT_NE(plan.kernels[2].origin.find("1.000 ms"), std::string::npos) << plan.kernels[2].origin;
  for (const PlannedKernel& k : plan.kernels) ASSERT_TRUE(k.layer.has_value());
  EXPECT_EQ(plan.kernels[0].spec_text(), "cross.dm32.full.mha2.d16.f32");
  EXPECT_EQ(plan.kernels[2].spec_text(), layer);
  ASSERT_EQ(plan.skipped.size(), 2u);  // both layers on CUDA
  EXPECT_NE(plan.skipped[0].find("CPU kernels only"), std::string::npos) << plan.skipped[0];
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Emit, OneDatabaseGivesByteIdenticalSources) {
  autotune::TempDir dir;
  const std::filesystem::path db = dir.path() / "tuning.jsonl";
  std::ofstream(db) << record("causal.mha2.d32.f32", "b1.q64.k64", 1.0, Status::ok).to_json().dump()
                    << "\n";
  for (const char* out : {"first", "second"}) {
    ASSERT_EQ(run_program({ATTNFORGE_EXE, "emit", "--db", db.string(), "--targets", "avx2", "--out",
                           (dir.path() / out).string()}),
              0);
  }
  int compared = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path() / "first")) {
    const std::filesystem::path relative = entry.path().lexically_relative(dir.path() / "first");
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() ||
        (ext != ".h" && ext != ".cpp" && ext != ".json" && ext != ".cmake")) {
      continue;
    }
    EXPECT_EQ(read_all(entry.path()), read_all(dir.path() / "second" / relative)) << relative;
    ++compared;
  }
  EXPECT_GE(compared, 8);  // table, manifest, 2 configs, 4 API headers, kernel headers
}

}  // namespace
}  // namespace attnforge::emit
