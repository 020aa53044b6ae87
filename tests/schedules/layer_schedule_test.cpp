// Layer schedules: projection knobs in the schedule data, their checks and
// defaults, and the layer space the tuner searches.
#include "schedules/layer_schedule.h"

#include <gtest/gtest.h>

#include "schedules/presets.h"
#include "schedules/space.h"

namespace attnforge::schedules {
namespace {

const Halide::Target kAvx512("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41");
const Halide::Target kAvx2("x86-64-linux-avx-avx2-f16c-fma-sse41");

std::string misfit(const Schedule& s, const LayerSpec& spec, const Halide::Target& target) {
  auto error = check_layer(s, spec, target);
  return error ? error->field() : "(fits)";
}

TEST(LayerSchedule, ProjectionKnobsRoundTripAndOnlyLayersTakeThem) {
  Schedule s = with_projection_defaults(load_preset("online_avx512"), kAvx512);
  s.projection_fuse_q = true;
  EXPECT_EQ(Schedule::from_json(s.to_json()), s);
  EXPECT_EQ(attention_part(s).to_json().count("projection_rows"), 0u);
  const AttentionSpec attention = AttentionSpec::parse("full.mha8.d64.f32");
  auto error = check(s, attention, kAvx512);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field(), "projection_vectors");
  EXPECT_FALSE(check(attention_part(s), attention, kAvx512).has_value());
}

TEST(LayerSchedule, EveryPresetWithDefaultsFitsItsTarget) {
  const LayerSpec spec = LayerSpec::parse("self.dm512.causal.mha8.d64.f32");
  for (const std::string& name : presets_for(kAvx2)) {
    if (load_preset(name).bf16_dots) continue;   // bf16 storage only; a layer stores f32
    if (load_preset(name).int16_dots) continue;  // int8 caches only; a layer stores f32
    const Halide::Target& target = name.find("avx512") != std::string::npos ? kAvx512 : kAvx2;
    EXPECT_EQ(misfit(with_projection_defaults(load_preset(name), target), spec, target), "(fits)")
        << name;
  }
}

TEST(LayerSchedule, MisfitsNameTheKnob) {
  const LayerSpec spec = LayerSpec::parse("self.dm512.full.mha8.d64.f32");
  const Schedule base = with_projection_defaults(load_preset("fused_avx2"), kAvx2);
  Schedule s = base;
  s.projection_rows = 16;  // 2 x 16 accumulators on AVX2's 16 registers
  EXPECT_EQ(misfit(s, spec, kAvx2), "projection_rows");
  s = base;
  s.projection_block = base.projection_rows * 3 + 1;
  EXPECT_EQ(misfit(s, spec, kAvx2), "projection_block");
  s = base;
  s.projection_vectors = 5;
  EXPECT_EQ(misfit(s, spec, kAvx2), "projection_vectors");
  s = base;
  s.projection_fuse_q = true;
  s.q_copy_at = StoreLevel::root;
  EXPECT_EQ(misfit(s, spec, kAvx2), "projection_fuse_q");
  s = with_projection_defaults(load_preset("materialized_avx2"), kAvx2);
  s.projection_fuse_q = true;
  EXPECT_EQ(misfit(s, spec, kAvx2), "projection_fuse_q");
}

TEST(LayerSchedule, GemmLanesDivideTheFeatures) {
  Schedule s;
  s.vector_width = 16;
  s.projection_vectors = 4;
  EXPECT_EQ(projection_lanes(s, 64), 16);
  EXPECT_EQ(projection_tile_vectors(s, 64), 4);
  EXPECT_EQ(projection_lanes(s, 24), 8);
  EXPECT_EQ(projection_tile_vectors(s, 24), 3);
  EXPECT_EQ(projection_lanes(s, 12), 4);
  EXPECT_EQ(projection_tile_vectors(s, 12), 3);
  EXPECT_EQ(projection_lanes(s, 7), 1);
}

TEST(LayerSpace, SamplesLegalLayerSchedulesDeterministically) {
  const LayerSpec spec = LayerSpec::parse("self.dm512.causal.mha8.d64.f32");
  ScheduleSpace space(spec, kAvx512);
  std::mt19937 a(3), b(3);
  bool fused_q = false;
  for (int n = 0; n < 200; ++n) {
    Schedule s = space.sample(a);
    EXPECT_EQ(s, space.sample(b));
    EXPECT_TRUE(space.contains(s)) << s.to_json().dump();
    EXPECT_GT(s.projection_rows, 0);
    EXPECT_EQ(s.projection_block % s.projection_rows, 0);
    if (s.projection_fuse_q) {
      fused_q = true;
      EXPECT_EQ(s.q_copy_at, StoreLevel::tile);
    }
  }
  EXPECT_TRUE(fused_q);
}

}  // namespace
}  // namespace attnforge::schedules
