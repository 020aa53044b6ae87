// The tuning database: append-only JSONL, one Record a line. Each append
// holds an exclusive flock while it writes whole lines on an O_APPEND
// descriptor, then fsyncs (and, for a new file, its directory), so a kill at
// any moment loses at most the records being written, and two writers never
// interleave within a line. Loading skips a torn or foreign line, never the file.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "record.h"

namespace attnforge::autotune {

// A line longer than this is not a record (and is skipped unread).
constexpr size_t kMaxRecordBytes = 1 << 20;

// Which contenders Database::winners compares; a field left empty admits all.
struct WinnerFilter {
  std::string target;          // a Halide target string
  std::set<RecordKind> kinds;  // e.g. preset and tuned: schedules, not the competitors
  std::function<bool(const Record&)> admits;  // any further condition
  bool backward = false;  // the backward kernels' records instead of the forward's
};

class Database {
 public:
  // Loads `path` if it exists; a missing file is an empty database.
  explicit Database(std::filesystem::path path);

  // Appends durably; throws std::runtime_error naming the file on an I/O error.
  void append(const Record& record);
  // Appends many records with one fsync (merging, importing).
  void append(const std::vector<Record>& records);

  // Reads the file again (e.g. after another process wrote to it).
  void reload();

  const std::vector<Record>& records() const { return records_; }
  // The line each record was read from or written as, fields this version
  // does not know included.
  const std::vector<std::string>& lines() const { return lines_; }
  // Lines that were not records: torn by a kill, hand-edited, too long.
  size_t skipped_lines() const { return skipped_; }
  const std::filesystem::path& path() const { return path_; }

  bool contains(const std::string& key) const { return standing_.count(key) != 0; }
  // The record that stands for a candidate (Record::key): of several, the
  // newest, so a finalist's confirmation replaces its search measurement.
  // Null when the key is not recorded.
  const Record* standing(const std::string& key) const;

  // The records of each (spec, target, bucket) group's current generation:
  // that of its newest correct record. Only these are compared, so after an
  // upgrade a group's winners are the old ones until a new version measures
  // a correct candidate, and from then on the new ones; older records stay
  // in the file (records()). A group without a correct record keeps all.
  // Only the standing record of each candidate is included.
  std::vector<Record> current_records() const;

  // The current records that may win. A schedule picked as the fastest of
  // many timings was likely timed on the fast side, so where a group's
  // current generation has correct confirmations (finalists measured again),
  // its schedules compete on those alone; the search records of the rest do
  // not, and neither do lucky ones that no confirmation pass reached.
  // Competitors (the naive baseline, autoschedulers) always take part.
  std::vector<Record> contenders() const;

  // The winners: of each (spec, target, bucket) group, the fastest correct
  // contender that `filter` admits (of equal times the earlier line), ordered
  // by spec, target and bucket.
  std::vector<Record> winners(const WinnerFilter& filter = {}) const;

  // The winner of one forward group (spec, target, bucket), if any.
  std::optional<Record> best(const std::string& spec, const std::string& target,
                             const std::string& bucket) const;

  // Estimates (Record::estimate) are never winners; these are the fastest
  // current estimate of each group that `filter` admits, what a cost model
  // ranks first where nothing may have been measured.
  std::vector<Record> estimated_winners(const WinnerFilter& filter = {}) const;

 private:
  void add(Record record, std::string line);
  // Writes `lines` (each a record's line, newline-terminated) durably, then adds the records.
  void append_lines(std::vector<Record> records, std::vector<std::string> lines);
  friend size_t merge(Database& into, const Database& from);
  bool is_current(size_t index) const;
  // Groups (Record::group) whose current generation has a correct confirmation.
  std::set<std::string> confirmed_groups() const;
  bool contends(size_t index, const std::set<std::string>& confirmed_groups) const;
  // The winner of each group among the correct contenders `admits` accepts,
  // or with `estimates`, among the current estimates.
  std::vector<const Record*> fastest_per_group(const std::function<bool(const Record&)>& admits,
                                               bool estimates = false) const;
  std::vector<Record> fastest_records(const WinnerFilter& filter, bool estimates) const;

  struct Newest {
    std::string time, generation;
  };

  std::filesystem::path path_;
  std::vector<Record> records_;
  std::vector<std::string> lines_;          // without the newline
  std::map<std::string, size_t> standing_;  // by Record::key(): index into records_
  std::map<std::string, Newest> newest_;    // by Record::group()
  size_t skipped_ = 0;
};

// Appends the records of `from` that `into` lacks, each as its original line
// (fields this version does not know kept), and returns how many. Another
// measurement of a recorded candidate is added, and the newest stands for it.
size_t merge(Database& into, const Database& from);

}  // namespace attnforge::autotune
