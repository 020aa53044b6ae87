// The knob table is the one description of a schedule: every row reads and
// writes its own field, JSON and canonical() follow the rows, former names
// still read, and the space searches exactly the rows the table says.
#include "schedules/knob_table.h"

#include <gtest/gtest.h>

#include <map>

#include "schedules/space.h"

namespace attnforge::schedules {
namespace {

const Halide::Target kAvx2("x86-64-linux-avx-avx2-f16c-fma-sse41");
const Halide::Target kCuda("x86-64-linux-avx-avx2-fma-cuda-cuda_capability_80");

const TargetKind kKinds[] = {TargetKind::cpu, TargetKind::gpu};

// Two switches are bools in a Schedule but 0/1 in JSON, as every record and
// preset has written them.
TEST(KnobTable, SwitchesStoredAsBoolsReadAndWriteZeroOrOne) {
  const Schedule fused = Schedule::from_json({{"projection_fuse_q", 1}, {"gpu_stage_kv", 1}});
  EXPECT_TRUE(fused.projection_fuse_q);
  EXPECT_TRUE(fused.gpu_stage_kv);
  EXPECT_EQ(fused.to_json().at("projection_fuse_q"), 1);
  EXPECT_EQ(fused.to_json().at("gpu_stage_kv"), 1);
  const Schedule unfused = Schedule::from_json({{"projection_fuse_q", 0}, {"gpu_stage_kv", 0}});
  EXPECT_FALSE(unfused.projection_fuse_q);
  EXPECT_FALSE(unfused.gpu_stage_kv);
  EXPECT_THROW(Schedule::from_json({{"gpu_stage_kv", 2}}), ScheduleError);
}

TEST(KnobTable, EveryRowReadsAndWritesItsOwnField) {
  const nlohmann::json unset = Schedule{}.to_json();
  for (const KnobRow& row : knob_table()) {
    for (TargetKind kind : kKinds) {
      for (int value : row.on(kind).searched) {
        Schedule s;
        row.set(s, value);
        EXPECT_EQ(row.get(s), value) << row.name();
        EXPECT_EQ(Schedule::from_json(s.to_json()), s) << row.name() << " " << value;
        // Only this row's key differs from a default schedule's JSON.
        nlohmann::json json = s.to_json();
        for (const auto& [key, written] : json.items()) {
          if (key == row.name()) continue;
          ASSERT_TRUE(unset.contains(key)) << row.name() << " wrote " << key;
          EXPECT_EQ(written, unset.at(key)) << row.name() << " moved " << key;
        }
        if (value != row.unset()) EXPECT_EQ(json[row.name()], row.to_json(value)) << row.name();
      }
    }
  }
}

TEST(KnobTable, NamesAreUniqueAndFoundByName) {
  std::set<std::string> names;
  for (const KnobRow& row : knob_table()) {
    EXPECT_TRUE(names.insert(row.name()).second) << row.name();
    EXPECT_EQ(&knob(row.name()), &row);
  }
  EXPECT_THROW(knob("tile"), ScheduleError);
}

TEST(KnobTable, TheFormerNameOfTheQCopyIsStillRead) {
  EXPECT_EQ(&knob("intermediates"), &knob("q_copy_at"));
  const Schedule old = Schedule::from_json({{"intermediates", "root"}});
  EXPECT_EQ(old.q_copy_at, StoreLevel::root);
  EXPECT_FALSE(old.to_json().contains("intermediates"));
  EXPECT_EQ(old.to_json()["q_copy_at"], "root");
  // Where a record has both, the current name wins.
  EXPECT_EQ(with_current_knob_names({{"intermediates", "root"}, {"q_copy_at", "tile"}}),
            nlohmann::json({{"q_copy_at", "tile"}}));
  EXPECT_EQ(with_current_knob_names("naive"), nlohmann::json("naive"));
}

TEST(KnobTable, ListsOfLoopsKeepTheirOrder) {
  const std::vector<std::vector<int>> lists = {{}, {0}, {1, 0}, {0, 1, 2, 3}, {3, 2, 1, 0}};
  for (const std::vector<int>& list : lists) {
    EXPECT_EQ(KnobRow::list_of_code(KnobRow::code_of_list(list)), list);
  }
  Schedule s;
  s.parallel = {ParallelLoop::query_tiles, ParallelLoop::batch};
  Schedule copy;
  knob("parallel").set(copy, knob("parallel").get(s));
  EXPECT_EQ(copy.parallel, s.parallel);
}

TEST(KnobTable, CanonicalUnsetsEveryKnobAFormIgnores) {
  for (const KnobRow& row : knob_table()) {
    for (TargetKind kind : kKinds) {
      for (Form form : {Form::materialized, Form::fused, Form::online}) {
        if (!row.ignored(kind, form)) continue;
        std::vector<int> values = row.on(TargetKind::cpu).searched;
        values.insert(values.end(), row.on(TargetKind::gpu).searched.begin(),
                      row.on(TargetKind::gpu).searched.end());
        if (values.empty()) values = {0};  // a flag never searched
        Schedule base;
        base.form = form;
        if (kind == TargetKind::gpu) base.gpu_threads_x = base.gpu_threads_y = 8;
        // Whatever its value, the knob does not change the canonical schedule.
        for (int value : values) {
          Schedule s = base;
          row.set(s, value);
          EXPECT_EQ(canonical(s), canonical(base))
              << row.name() << " = " << value << " on " << to_string(form);
        }
      }
    }
  }
  // What a CPU schedule's form reads stays.
  Schedule online;
  online.query_tile = 96;
  online.q_copy_at = StoreLevel::root;
  EXPECT_EQ(canonical(online).query_tile, 96);
  EXPECT_EQ(canonical(online).q_copy_at, StoreLevel::root);
}

TEST(KnobTable, RangesSayWhatTheyExpect) {
  const KnobRange powers{1, 8, true};
  EXPECT_TRUE(powers.contains(4));
  EXPECT_FALSE(powers.contains(3));
  EXPECT_EQ(powers.describe(3), "3; expected 1, 2, 4 or 8");
  const KnobRange chunk{8, 512, false, 0};
  EXPECT_TRUE(chunk.contains(0));
  EXPECT_FALSE(chunk.contains(4));
  EXPECT_EQ(chunk.describe(4), "4; expected 0 (off) or 8..512");
}

TEST(KnobTable, LegalValuesAreCheckedByName) {
  Schedule s;
  s.unroll = 3;
  auto misfit = check_legal_values(s, TargetKind::cpu, {KnobScope::cpu});
  ASSERT_TRUE(misfit.has_value());
  EXPECT_EQ(misfit->field(), "unroll");
  // The materialized form does not read the unroll.
  s.form = Form::materialized;
  EXPECT_FALSE(check_legal_values(s, TargetKind::cpu, {KnobScope::cpu}).has_value());
  Schedule fused;
  fused.form = Form::fused;
  misfit = check_legal_values(fused, TargetKind::gpu, {KnobScope::attention});
  ASSERT_TRUE(misfit.has_value());
  EXPECT_EQ(misfit->field(), "form");
  EXPECT_NE(std::string(misfit->what()).find("no CUDA schedule"), std::string::npos);
}

// The space's knobs are the table's searched rows of its scopes, in order.
std::vector<std::string> space_knobs(const ScheduleSpace& space) {
  std::vector<std::string> names;
  for (const Knob& knob : space.knobs()) names.push_back(knob.name());
  return names;
}

// The space's knobs, written out here rather than derived from the table the
// space reads, and each knob's values: the row's searched ones, but for the
// knobs the spec or target narrows.
TEST(KnobTable, TheSpaceSearchesTheRowsOfItsTarget) {
  const AttentionSpec spec = AttentionSpec::parse("full.mha8.d64.f32");
  const std::vector<std::string> cpu = {
      "form",        "parallel",     "q_copy_at",  "dot_axis",      "query_tile",
      "key_block",   "vector_width", "unroll",     "register_rows", "register_vectors",
      "kv_splits",   "pv_rows",      "pv_vectors", "pv_chunk",      "prefetch_blocks",
      "group_heads", "bf16_dots",    "int16_dots"};
  EXPECT_EQ(space_knobs(ScheduleSpace(spec, kAvx2)), cpu);
  const std::vector<std::string> gpu = {"form",        "query_tile",    "key_block",
                                        "kv_splits",   "gpu_threads_x", "gpu_threads_y",
                                        "gpu_stage_kv"};
  EXPECT_EQ(space_knobs(ScheduleSpace(spec, kCuda)), gpu);
  const LayerSpec layer = LayerSpec::parse("self.dm512.causal.mha8.d64.f32");
  std::vector<std::string> with_projections = cpu;
  with_projections.insert(with_projections.end(), {"projection_vectors", "projection_rows",
                                                   "projection_block", "projection_fuse_q"});
  EXPECT_EQ(space_knobs(ScheduleSpace(layer, kAvx2)), with_projections);

  // AVX2 has 8 lanes; one head per KV group and f32 storage leave nothing to group or pair.
  const std::map<std::string, std::vector<int>> narrowed = {
      {"vector_width", {8}}, {"group_heads", {0}}, {"bf16_dots", {0}}, {"int16_dots", {0}}};
  const ScheduleSpace on_avx2(spec, kAvx2), on_cuda(spec, kCuda);
  for (const Knob& knob : on_avx2.knobs()) {
    const auto found = narrowed.find(knob.name());
    EXPECT_EQ(knob.values,
              found != narrowed.end() ? found->second : knob.row->on(TargetKind::cpu).searched)
        << knob.name();
  }
  for (const Knob& knob : on_cuda.knobs()) {
    EXPECT_EQ(knob.values, knob.row->on(TargetKind::gpu).searched) << knob.name();
  }
}

}  // namespace
}  // namespace attnforge::schedules
