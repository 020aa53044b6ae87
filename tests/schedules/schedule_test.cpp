// Schedules as data: the JSON form round-trips, presets load, and every
// schedule that does not fit its spec or target is rejected by name.
#include "schedules/schedule.h"

#include <gtest/gtest.h>

#include "schedules/layer_schedule.h"
#include "schedules/presets.h"
#include "schedules/space.h"

namespace attnforge::schedules {
namespace {

const Halide::Target kAvx2("x86-64-linux-avx-avx2-f16c-fma-sse41");
const Halide::Target kAvx512("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41");
const Halide::Target kCuda("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");

TEST(Schedule, JsonRoundTrips) {
  Schedule s;
  s.form = Form::fused;
  s.query_tile = 48;
  s.key_block = 96;
  s.vector_width = 16;
  s.unroll = 2;
  s.register_rows = 3;
  s.register_vectors = 1;
  s.parallel = {ParallelLoop::heads, ParallelLoop::batch};
  s.q_copy_at = StoreLevel::root;
  s.skip_masked_blocks = false;
  EXPECT_EQ(Schedule::from_json(s.to_json()), s);
  EXPECT_EQ(Schedule::from_json(nlohmann::json::parse(s.to_json().dump())), s);
  EXPECT_NE(Schedule::from_json(s.to_json()), Schedule{});
}

TEST(Schedule, MissingFieldsTakeDefaults) {
  EXPECT_EQ(Schedule::from_json(nlohmann::json::object()), Schedule{});
}

struct BadJson {
  const char* json;
  const char* field;
};

class InvalidScheduleJson : public ::testing::TestWithParam<BadJson> {};

TEST_P(InvalidScheduleJson, NamesTheField) {
  try {
    Schedule::from_json(nlohmann::json::parse(GetParam().json));
    FAIL() << GetParam().json;
  } catch (const ScheduleError& error) {
    EXPECT_EQ(error.field(), GetParam().field) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Json, InvalidScheduleJson,
    ::testing::Values(BadJson{R"([1, 2])", "schedule"}, BadJson{R"({"form": "flash"})", "form"},
                      BadJson{R"({"form": 3})", "form"},
                      BadJson{R"({"query_tile": "big"})", "query_tile"},
                      BadJson{R"({"query_tile": -4})", "query_tile"},
                      BadJson{R"({"key_block": 1.5})", "key_block"},
                      BadJson{R"({"parallel": ["heads", "heads"]})", "parallel"},
                      BadJson{R"({"parallel": ["rows"]})", "parallel"},
                      BadJson{R"({"skip_masked_blocks": 1})", "skip_masked_blocks"},
                      BadJson{R"({"q_copy_at": "register"})", "q_copy_at"},
                      BadJson{R"({"tile": 4})", "tile"}));

TEST(Presets, OnePerFormAndTargetClassAllValid) {
  std::vector<std::string> names = preset_names();
  for (const char* form : {"online", "fused", "materialized"}) {
    for (const char* target : {"avx2", "avx512"}) {
      std::string name = std::string(form) + "_" + target;
      ASSERT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
      Schedule preset = load_preset(name);
      EXPECT_EQ(to_string(preset.form), form);
      AttentionSpec spec = AttentionSpec::parse("causal.mha8.d64.f32");
      EXPECT_NO_THROW(validate(preset, spec, std::string(target) == "avx2" ? kAvx2 : kAvx512));
    }
  }
}

TEST(Presets, UnknownNameListsTheKnownOnes) {
  try {
    load_preset("fastest");
    FAIL();
  } catch (const ScheduleError& error) {
    EXPECT_EQ(error.field(), "preset");
    EXPECT_NE(std::string(error.what()).find("online_avx2"), std::string::npos);
  }
}

struct Misfit {
  const char* name;
  std::function<void(Schedule&)> change;
  const char* spec;
  const char* field;
};

TEST(Validate, RejectsWhatDoesNotFitBeforeCompiling) {
  const Misfit misfits[] = {
      {"avx512 width on avx2", [](Schedule& s) { s.vector_width = 16; }, "full.mha8.d64.f32",
       "vector_width"},
      {"odd width", [](Schedule& s) { s.vector_width = 6; }, "full.mha8.d64.f32", "vector_width"},
      {"tile too large", [](Schedule& s) { s.query_tile = 512; }, "full.mha8.d64.f32",
       "query_tile"},
      {"tile not a multiple", [](Schedule& s) { s.query_tile = 40; }, "full.mha8.d64.f32",
       "query_tile"},
      {"key block too small", [](Schedule& s) { s.key_block = 4; }, "full.mha8.d64.f32",
       "key_block"},
      {"too many accumulators",
       [](Schedule& s) {
         s.register_vectors = 3;
         s.register_rows = 8;
         s.query_tile = 48;
       },
       "full.mha8.d64.f32", "register_rows"},
      {"head dim not a vector multiple", [](Schedule& s) { (void)s; }, "full.mha8.d36.f32",
       "vector_width"},
      {"weights from online", [](Schedule& s) { (void)s; }, "full.mha8.d64.f32.weights", "form"},
      {"kv splits not a power of two", [](Schedule& s) { s.kv_splits = 3; }, "full.mha8.d64.f32",
       "kv_splits"},
      {"kv splits on the fused form",
       [](Schedule& s) {
         s.form = Form::fused;
         s.kv_splits = 2;
       },
       "full.mha8.d64.f32", "kv_splits"},
      {"parallel splits without splits",
       [](Schedule& s) { s.parallel.push_back(ParallelLoop::kv_splits); }, "full.mha8.d64.f32",
       "parallel"},
      {"unroll", [](Schedule& s) { s.unroll = 3; }, "full.mha8.d64.f32", "unroll"},
      {"P.V chunk too small", [](Schedule& s) { s.pv_chunk = 4; }, "full.mha8.d64.f32", "pv_chunk"},
      {"P.V chunk not dividing the key block", [](Schedule& s) { s.pv_chunk = 48; },
       "full.mha8.d64.f32", "pv_chunk"},
      {"P.V chunk not a multiple of unroll",
       [](Schedule& s) {
         s.form = Form::fused;
         s.unroll = 4;
         s.pv_chunk = 18;
       },
       "full.mha8.d64.f32", "pv_chunk"},
      {"prefetch without rows streamed along the head dim",
       [](Schedule& s) { s.prefetch_blocks = 1; }, "full.mha8.d64.f32", "prefetch_blocks"},
  };
  for (const Misfit& m : misfits) {
    Schedule s = load_preset("online_avx2");
    m.change(s);
    try {
      validate(s, AttentionSpec::parse(m.spec), kAvx2);
      ADD_FAILURE() << m.name << " was accepted";
    } catch (const ScheduleError& error) {
      EXPECT_EQ(error.field(), m.field) << m.name << ": " << error.what();
    }
  }
  EXPECT_THROW(validate(load_preset("online_avx2"), AttentionSpec::parse("full.mha8.d64.f32"),
                        Halide::Target("arm-64-linux")),
               ScheduleError);
}

TEST(Schedule, CanonicalDropsKnobsTheFormIgnores) {
  Schedule materialized;
  materialized.form = Form::materialized;
  materialized.query_tile = 96;
  materialized.register_rows = 6;
  materialized.parallel = {ParallelLoop::query_tiles, ParallelLoop::heads};
  Schedule expected;
  expected.form = Form::materialized;
  expected.parallel = {ParallelLoop::heads};
  EXPECT_EQ(canonical(materialized), expected);

  Schedule fused = load_preset("fused_avx2");
  Schedule other_block = fused;
  other_block.key_block = 192;
  EXPECT_EQ(canonical(other_block), canonical(fused));
  Schedule online = load_preset("online_avx2");
  EXPECT_EQ(canonical(online), online);

  // A P.V chunk as long as the key block is one pass; materialized has no chunks.
  Schedule one_chunk = online;
  one_chunk.pv_chunk = online.key_block;
  EXPECT_EQ(canonical(one_chunk), online);
  materialized.pv_chunk = 32;
  EXPECT_EQ(canonical(materialized), expected);
}

TEST(Validate, CpuAndCudaSchedulesStayOnTheirTargets) {
  const AttentionSpec spec = AttentionSpec::parse("full.mha8.d64.f32");
  auto misfit = check(load_preset("online_avx2"), spec, kCuda);
  ASSERT_TRUE(misfit.has_value());
  EXPECT_EQ(misfit->field(), "gpu_threads_x");
  misfit = check(load_preset("online_cuda"), spec, kAvx512);
  ASSERT_TRUE(misfit.has_value());
  EXPECT_EQ(misfit->field(), "gpu_threads_x");
  Schedule cuda = load_preset("online_cuda");
  misfit = check(cuda, spec, Halide::Target("x86-64-linux-avx2-metal"));
  ASSERT_TRUE(misfit.has_value());
  EXPECT_EQ(misfit->field(), "target");
}

// The whole space takes minutes to enumerate: the P.V tile, chunk, tile and
// block knobs are narrowed to a few values each (multiples of 3 kept, for
// 3-row register tiles); every other knob keeps all its values.
void narrow(ScheduleSpace& space) {
  space.restrict_knob("query_tile", {32, 48});
  space.restrict_knob("key_block", {48, 64});
  space.restrict_knob("pv_rows", {0, 4});
  space.restrict_knob("pv_vectors", {0, 2});
  space.restrict_knob("pv_chunk", {0, 16});
}

TEST(Space, EnumeratesEachCanonicalScheduleOnce) {
  ScheduleSpace space(AttentionSpec::parse("full.mha8.d64.f32"), kAvx512);
  narrow(space);
  std::set<std::string> seen;
  bool three_rows = false, dots_along_head_dim = false, prefetching = false;
  for (const Schedule& s : space.enumerate()) {
    EXPECT_EQ(canonical(s), s);
    EXPECT_TRUE(seen.insert(s.to_json().dump()).second) << s.to_json().dump();
    three_rows = three_rows || s.register_rows == 3;
    dots_along_head_dim = dots_along_head_dim || s.dot_axis == DotAxis::head_dim;
    prefetching = prefetching || s.prefetch_blocks > 0;
    EXPECT_FALSE(s.group_heads) << "one head per KV group has nothing to group";
  }
  EXPECT_TRUE(three_rows);
  EXPECT_TRUE(dots_along_head_dim);
  EXPECT_TRUE(prefetching);
}

TEST(Space, EnumeratesOnlyLegalSchedulesOfEveryForm) {
  AttentionSpec spec = AttentionSpec::parse("causal.mha8.d64.f32");
  ScheduleSpace space(spec, kAvx2);
  narrow(space);
  std::vector<Schedule> all = space.enumerate();
  ASSERT_GT(all.size(), 100u);
  std::set<Form> forms;
  for (const Schedule& s : all) {
    EXPECT_NO_THROW(validate(s, spec, kAvx2)) << s.to_json().dump();
    EXPECT_LE(s.vector_width, 8);
    forms.insert(s.form);
  }
  EXPECT_EQ(forms.size(), 3u);
  EXPECT_EQ(
      ScheduleSpace(AttentionSpec::parse("causal.mha8.d64.f32.weights"), kAvx2).knob("form").values,
      std::vector<int>{static_cast<int>(Form::materialized)});
}

TEST(Space, SamplingIsDeterministicPerSeedAndUsesWideVectorsOnAvx512) {
  AttentionSpec spec = AttentionSpec::parse("full.mha8.d64.f32");
  ScheduleSpace space(spec, kAvx512);
  std::mt19937 a(5), b(5);
  bool wide = false;
  for (int n = 0; n < 50; ++n) {
    Schedule s = space.sample(a);
    EXPECT_EQ(s, space.sample(b));
    wide = wide || s.vector_width == 16;
  }
  EXPECT_TRUE(wide);
}

// The layer is built for CPUs: on a GPU target no schedule fits (named by
// the check), and a search of its space finds none instead of dividing by a
// GPU schedule's unset projection knobs.
TEST(Space, ALayerOnAGpuTargetHasNoScheduleAndSaysWhy) {
  const LayerSpec layer = LayerSpec::parse("self.dm512.causal.mha8.d64.f32");
  auto misfit = check_layer(Schedule{}, layer, kCuda);
  ASSERT_TRUE(misfit.has_value());
  EXPECT_EQ(misfit->field(), "target");
  ScheduleSpace space(layer, kCuda);
  std::mt19937 rng(5);
  EXPECT_THROW(space.sample(rng), ScheduleError);
  EXPECT_TRUE(space.enumerate().empty());
}

}  // namespace
}  // namespace attnforge::schedules
