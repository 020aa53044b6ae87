// The tuning database keeps every complete record through kills, torn lines,
// foreign lines and concurrent writers.
#include "autotune/database.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "autotune/summary.h"
#include "autotune/temp_dir.h"

namespace attnforge::autotune {
namespace {

// A database path in a folder of its own, removed with it.
struct TempFile {
  TempDir dir;
  std::filesystem::path path = dir.path() / "tuning.jsonl";
};

Record make_record(int n, double ms = 1.0, Status status = Status::ok) {
  Record r;
  r.spec = "causal.mha8.d64.f32";
  r.target = "x86-64-linux-avx-avx2-fma";
  r.bucket = "b1.q2048.k2048";
  r.schedule = {{"form", "online"}, {"query_tile", n}};
  r.status = status;
  r.ms_median = r.ms_min = r.ms_max = ms;
  r.time = utc_now();
  return r;
}

void append_raw(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

TEST(Database, AppendedRecordsLoadBackEqual) {
  TempFile file;
  {
    Database db(file.path);
    EXPECT_TRUE(db.records().empty());
    db.append(make_record(1, 2.0));
    db.append(make_record(2, 1.5, Status::wrong));
    EXPECT_TRUE(db.contains(make_record(1).key()));
  }
  Database db(file.path);
  ASSERT_EQ(db.records().size(), 2u);
  Record expected = make_record(1, 2.0);
  expected.time = db.records()[0].time;
  EXPECT_EQ(db.records()[0].to_json(), expected.to_json());
  EXPECT_EQ(db.records()[1].status, Status::wrong);
  EXPECT_EQ(db.skipped_lines(), 0u);
}

TEST(Database, BestIsTheFastestCorrectRecord) {
  TempFile file;
  Database db(file.path);
  db.append(make_record(1, 3.0));
  db.append(make_record(2, 1.0, Status::wrong));  // faster but wrong
  db.append(make_record(3, 2.0));
  auto best = db.best("causal.mha8.d64.f32", "x86-64-linux-avx-avx2-fma", "b1.q2048.k2048");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->schedule["query_tile"], 3);
  EXPECT_FALSE(db.best("causal.mha8.d64.f32", "other", "b1.q2048.k2048").has_value());
}

TEST(Database, OnlyTheNewestGenerationOfAGroupCompetes) {
  TempFile file;
  Record old_fast = make_record(1, 1.0);
  old_fast.attnforge_version = "0.1.0";
  old_fast.time = "2026-01-01T00:00:00Z";
  Record new_slow = make_record(1, 2.0);  // the same candidate, measured again
  new_slow.attnforge_version = "0.2.0";
  new_slow.time = "2026-02-01T00:00:00Z";
  Record other_group = make_record(2, 5.0);
  other_group.bucket = "b1.q512.k512";
  other_group.time = "2025-01-01T00:00:00Z";
  EXPECT_NE(old_fast.key(), new_slow.key());
  {
    Database db(file.path);
    db.append(std::vector<Record>{new_slow, old_fast, other_group});  // file order is not time
  }
  Database db(file.path);
  std::vector<Record> current = db.current_records();
  ASSERT_EQ(current.size(), 2u);  // other_group is alone in its group
  EXPECT_EQ(current[0].attnforge_version, "0.2.0");
  EXPECT_EQ(current[1].bucket, "b1.q512.k512");
  auto best = db.best("causal.mha8.d64.f32", "x86-64-linux-avx-avx2-fma", "b1.q2048.k2048");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->attnforge_version, "0.2.0");
  std::vector<GroupSummary> groups = summarize(db);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].measured, 1);
  EXPECT_DOUBLE_EQ(groups[0].best_tuned->ms_median, 2.0);

  // A still newer version whose candidate failed leaves 0.2.0 current.
  Record newer_failed = make_record(3, 0.0, Status::compile_failed);
  newer_failed.attnforge_version = "0.3.0";
  newer_failed.time = "2026-03-01T00:00:00Z";
  db.append(newer_failed);
  best = db.best("causal.mha8.d64.f32", "x86-64-linux-avx-avx2-fma", "b1.q2048.k2048");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->attnforge_version, "0.2.0");
  EXPECT_EQ(db.current_records().size(), 2u);
}

// A candidate measured again (a confirmation, another machine's database
// merged in): the newer record stands for it, whether faster or slower, and
// of equal times the later line.
TEST(Database, TheNewestRecordOfACandidateStandsForIt) {
  TempFile file;
  Record lucky = make_record(1, 1.0);
  lucky.time = "2026-01-01T00:00:00Z";
  Record again = make_record(1, 3.0);
  again.time = "2026-01-01T00:05:00Z";
  Record other = make_record(2, 2.0);
  other.time = "2026-01-01T00:01:00Z";
  {
    Database db(file.path);
    db.append(std::vector<Record>{again, lucky, other});  // file order is not time
  }
  Database db(file.path);
  ASSERT_NE(db.standing(lucky.key()), nullptr);
  EXPECT_EQ(db.standing(lucky.key())->time, again.time);
  EXPECT_EQ(db.standing(make_record(9).key()), nullptr);
  auto best = db.best("causal.mha8.d64.f32", "x86-64-linux-avx-avx2-fma", "b1.q2048.k2048");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->schedule["query_tile"], 2);  // 1.0 ms was superseded by 3.0 ms
  EXPECT_EQ(db.current_records().size(), 2u);
  EXPECT_EQ(summarize(db).at(0).measured, 2);

  Record same_time = make_record(2, 4.0);
  same_time.time = other.time;
  db.append(same_time);
  EXPECT_DOUBLE_EQ(db.standing(other.key())->ms_median, 4.0);
  Database reloaded(file.path);
  EXPECT_DOUBLE_EQ(reloaded.standing(other.key())->ms_median, 4.0);
  EXPECT_EQ(reloaded.records().size(), 4u);  // nothing is dropped from the file
}

// A cost model's estimate is a candidate of its own: it never wins, never
// hides a measurement of the same schedule (recorded before or after it),
// and reads back as an estimate.
TEST(Database, EstimatesStandApartFromMeasurements) {
  TempFile file;
  Record estimate = make_record(1, 0.5);
  estimate.estimate = true;
  estimate.time = "2026-01-01T00:05:00Z";
  Record measured = make_record(1, 2.0);
  measured.time = "2026-01-01T00:00:00Z";
  Record other_estimate = make_record(2, 0.7);
  other_estimate.estimate = true;
  {
    Database db(file.path);
    db.append(std::vector<Record>{measured, estimate, other_estimate});
  }
  Database db(file.path);
  EXPECT_NE(estimate.key(), measured.key());
  ASSERT_NE(db.standing(measured.key()), nullptr);
  EXPECT_FALSE(db.standing(measured.key())->estimate);
  EXPECT_TRUE(db.standing(estimate.key())->estimate);
  auto best = db.best(measured.spec, measured.target, measured.bucket);
  ASSERT_TRUE(best.has_value());
  EXPECT_DOUBLE_EQ(best->ms_median, 2.0);
  EXPECT_EQ(db.contenders().size(), 1u);
  const std::vector<Record> estimated = db.estimated_winners();
  ASSERT_EQ(estimated.size(), 1u);
  EXPECT_DOUBLE_EQ(estimated[0].ms_median, 0.5);
  const GroupSummary g = summarize(db).at(0);
  EXPECT_EQ(g.measured, 1);
  EXPECT_EQ(g.estimated, 2);
  ASSERT_TRUE(g.best_estimate.has_value());
  EXPECT_DOUBLE_EQ(g.best_estimate->ms_median, 0.5);
  EXPECT_FALSE(measured.to_json().contains("estimate"));  // measurements' lines are unchanged
}

// Once a group has correct confirmations, its schedules compete on them alone:
// a lucky search timing that no confirmation reached does not win, while the
// competitors still take part. Where every confirmation failed, all compete.
TEST(Database, ConfirmedSchedulesAloneContendInTheirGroup) {
  TempFile file;
  Database db(file.path);
  Record confirmed = make_record(1, 3.0);
  confirmed.confirmation = true;
  Record autoscheduler = make_record(0, 2.5);
  autoscheduler.schedule = "autoscheduler:Adams2019";
  Record other_group = make_record(3, 9.0);
  other_group.bucket = "b1.q512.k512";
  db.append(std::vector<Record>{make_record(1, 1.0), make_record(2, 2.0), confirmed, autoscheduler,
                                other_group});
  auto best = db.best("causal.mha8.d64.f32", "x86-64-linux-avx-avx2-fma", "b1.q2048.k2048");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->schedule, "autoscheduler:Adams2019");
  std::vector<Record> contenders = db.contenders();
  ASSERT_EQ(contenders.size(), 3u);  // query_tile 2 and the superseded 1.0 ms are out
  EXPECT_TRUE(contenders[0].confirmation);
  EXPECT_EQ(contenders[2].bucket, "b1.q512.k512");  // a group without confirmations
  GroupSummary g = summarize(db).at(0);
  EXPECT_EQ(g.measured, 3);  // counts stay over all current records
  EXPECT_DOUBLE_EQ(g.best_tuned->ms_median, 3.0);

  Record failed = confirmed;
  failed.status = Status::crashed;
  db.append(failed);
  EXPECT_EQ(db.contenders().size(), 4u);
  EXPECT_EQ(summarize(db).at(0).best_tuned->schedule["query_tile"], 2);
}

// Merging adds what the target lacks line for line: twice adds nothing, and
// another machine's confirmation of a recorded candidate is added and stands.
TEST(Database, MergeAddsMissingRecordsOnce) {
  TempFile into_file, from_file;
  Record searched = make_record(1, 1.0);
  searched.time = "2026-01-01T00:00:00Z";
  Record confirmed = searched;
  confirmed.ms_median = confirmed.ms_min = confirmed.ms_max = 2.0;
  confirmed.time = "2026-01-01T00:03:00Z";
  confirmed.confirmation = true;
  Database into(into_file.path);
  into.append(searched);
  Database from(from_file.path);
  from.append(std::vector<Record>{searched, confirmed, make_record(2, 5.0)});
  EXPECT_EQ(merge(into, from), 2u);
  EXPECT_EQ(merge(into, from), 0u);
  Database reloaded(into_file.path);
  EXPECT_EQ(reloaded.records().size(), 3u);
  EXPECT_TRUE(reloaded.standing(searched.key())->confirmation);
}

// A newer version's fields survive a merge: the line is copied as read.
TEST(Database, MergeKeepsFieldsThisVersionDoesNotKnow) {
  TempFile into_file, from_file;
  nlohmann::json line = make_record(1).to_json();
  line["ms_p90"] = 1.5;
  append_raw(from_file.path, line.dump() + "\n");
  Database into(into_file.path);
  EXPECT_EQ(merge(into, Database(from_file.path)), 1u);
  std::ifstream merged(into_file.path);
  std::string text;
  std::getline(merged, text);
  EXPECT_EQ(nlohmann::json::parse(text).at("ms_p90"), 1.5);
  EXPECT_EQ(Database(into_file.path).records().size(), 1u);
}

// A failure message cut inside a multi-byte character still appends: the
// broken bytes are replaced, and the record loads.
TEST(Database, AMessageCutMidCharacterIsStored) {
  TempFile file;
  Record failed = make_record(1, 0.0, Status::crashed);
  failed.detail = std::string(1999, 'x') + std::string("\xe2\x80\x94").substr(0, 1);
  Database db(file.path);
  ASSERT_NO_THROW(db.append(failed));
  Database reloaded(file.path);
  ASSERT_EQ(reloaded.records().size(), 1u);
  EXPECT_EQ(reloaded.records()[0].detail.substr(0, 1999), std::string(1999, 'x'));
}

TEST(Database, AGroupWithoutACorrectRecordKeepsItsRecords) {
  TempFile file;
  Database db(file.path);
  db.append(make_record(1, 0.0, Status::crashed));
  EXPECT_EQ(db.current_records().size(), 1u);
  EXPECT_EQ(summarize(db).at(0).failures, 1);
}

TEST(Database, TornAndForeignLinesAreSkippedNotTheFile) {
  TempFile file;
  Database writer(file.path);
  writer.append(make_record(1));
  append_raw(file.path, "this is not json\n{\"spec\": 3}\n\n");
  std::string torn = make_record(2).to_json().dump();
  append_raw(file.path, torn.substr(0, torn.size() / 2));  // a writer killed mid-line
  writer.append(make_record(3));                           // must start on a fresh line
  Database db(file.path);
  ASSERT_EQ(db.records().size(), 2u);
  EXPECT_EQ(db.records()[1].schedule["query_tile"], 3);
  EXPECT_EQ(db.skipped_lines(), 3u);  // not json, not a record, torn
}

TEST(Database, RecordWithAnOptionalFieldOfAnotherTypeIsSkipped) {
  TempFile file;
  Database writer(file.path);
  writer.append(make_record(1));
  nlohmann::json odd = make_record(2).to_json();
  odd["halide_version"] = 21;  // text expected
  append_raw(file.path, odd.dump() + "\n");
  Database db(file.path);
  ASSERT_EQ(db.records().size(), 1u);
  EXPECT_EQ(db.skipped_lines(), 1u);
}

TEST(Database, OverlongLineIsSkipped) {
  TempFile file;
  append_raw(file.path, std::string(kMaxRecordBytes + 10, '[') + "\n");
  Database db(file.path);
  db.append(make_record(1));
  db.reload();
  EXPECT_EQ(db.records().size(), 1u);
  EXPECT_EQ(db.skipped_lines(), 1u);
}

TEST(Database, DeeplyNestedLineIsSkipped) {
  TempFile file;
  append_raw(file.path, std::string(50000, '[') + std::string(50000, ']') + "\n");
  Database db(file.path);
  db.append(make_record(1));
  db.reload();
  EXPECT_EQ(db.records().size(), 1u);
  EXPECT_EQ(db.skipped_lines(), 1u);
}

TEST(Database, TwoWritersNeverInterleave) {
  TempFile file;
  constexpr int kEach = 200;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  const int offset = child == 0 ? 100000 : 0;
  {
    Database db(file.path);
    for (int n = 0; n < kEach; ++n) db.append(make_record(offset + n));
  }
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  Database db(file.path);
  EXPECT_EQ(db.records().size(), 2u * kEach);
  EXPECT_EQ(db.skipped_lines(), 0u);
}

TEST(Database, KilledWriterLosesAtMostTheRecordInFlight) {
  TempFile file;
  std::mt19937 rng(9);
  size_t loaded = 0;
  for (int kill_round = 0; kill_round < 10; ++kill_round) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Database db(file.path);
      for (int n = 0;; ++n) db.append(make_record(kill_round * 1000000 + n));
    }
    usleep(std::uniform_int_distribution<int>(2000, 20000)(rng));
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    Database db(file.path);  // always loads
    EXPECT_GE(db.records().size(), loaded);
    EXPECT_LE(db.skipped_lines(), static_cast<size_t>(kill_round + 1));
    loaded = db.records().size();
  }
  EXPECT_GT(loaded, 0u);
}

TEST(Summary, SeparatesNaivePresetsAutoschedulersAndTuned) {
  TempFile file;
  Database db(file.path);
  Record naive = make_record(0, 100.0);
  naive.schedule = "naive";
  Record adams = make_record(0, 20.0);
  adams.schedule = "autoscheduler:Adams2019";
  Record li = make_record(0, 30.0, Status::crashed);
  li.schedule = "autoscheduler:Li2018";
  Record preset = make_record(1, 5.0);
  preset.strategy = "preset:online_avx2";
  Record tuned = make_record(2, 4.0);
  Record wrong = make_record(3, 1.0, Status::wrong);
  db.append(std::vector<Record>{naive, adams, li, preset, tuned, wrong});
  std::vector<GroupSummary> groups = summarize(db);
  ASSERT_EQ(groups.size(), 1u);
  const GroupSummary& g = groups[0];
  EXPECT_EQ(g.measured, 6);
  EXPECT_EQ(g.failures, 2);
  EXPECT_DOUBLE_EQ(g.naive->ms_median, 100.0);
  EXPECT_EQ(g.best_autoscheduler->schedule, "autoscheduler:Adams2019");
  EXPECT_DOUBLE_EQ(g.best_preset->ms_median, 5.0);
  EXPECT_DOUBLE_EQ(g.best_tuned->ms_median, 4.0);  // the wrong one never wins
}

}  // namespace
}  // namespace attnforge::autotune
