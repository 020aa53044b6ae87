#include "database.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "schedules/bounded_json.h"

namespace attnforge::autotune {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what) {
  throw std::runtime_error("tuning database " + path.string() + ": " + what + ": " +
                           std::strerror(errno));
}

// A record as its line. A message cut mid-character is not valid UTF-8; the
// broken bytes are replaced rather than failing the append.
std::string line_of(const Record& record) {
  return record.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Whole lines per write(2), so a line is never split between two writes;
// bounded, because one write moves at most about 2 GiB.
constexpr size_t kMaxWriteBytes = size_t{64} << 20;

// Writes every line (newline-terminated); a short write (disk full) is an
// error, not a retry.
void write_lines(int fd, const std::vector<std::string>& lines, const std::filesystem::path& path) {
  std::string chunk;
  auto flush = [&] {
    if (chunk.empty()) return;
    ssize_t written = ::write(fd, chunk.data(), chunk.size());
    if (written < 0) fail(path, "write");
    if (static_cast<size_t>(written) != chunk.size()) {
      throw std::runtime_error(fmt::format(
          "tuning database {}: wrote {} of {} bytes (is the disk full?); the last line is torn "
          "and will be skipped on load",
          path.string(), written, chunk.size()));
    }
    chunk.clear();
  };
  for (const std::string& line : lines) {
    if (!chunk.empty() && chunk.size() + line.size() > kMaxWriteBytes) flush();
    chunk += line;
  }
  flush();
}

// A new file's directory entry is durable only once its directory is synced.
void sync_directory_of(const std::filesystem::path& path) {
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(dir, "open its directory");
  int synced = ::fsync(fd);
  ::close(fd);
  if (synced != 0) fail(dir, "fsync its directory");
}

// True when the file is non-empty and its last byte is not a newline: a
// killed writer left a torn line that the next record must not extend.
bool ends_torn(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size == 0) return false;
  char last = '\n';
  return ::pread(fd, &last, 1, info.st_size - 1) == 1 && last != '\n';
}

void lock_exclusive(int fd, const std::filesystem::path& path) {
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) fail(path, "flock");
  }
}

}  // namespace

Database::Database(std::filesystem::path path) : path_(std::move(path)) {
  reload();
}

void Database::reload() {
  records_.clear();
  lines_.clear();
  standing_.clear();
  newest_.clear();
  skipped_ = 0;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.size() > kMaxRecordBytes) {
      ++skipped_;
      continue;
    }
    try {
      add(Record::from_json(schedules::parse_bounded_json(line, "record")), line);
    } catch (const std::invalid_argument&) {
      ++skipped_;
    }
  }
}

void Database::append(const Record& record) {
  append(std::vector<Record>{record});
}

void Database::append(const std::vector<Record>& records) {
  std::vector<std::string> lines;
  for (const Record& record : records) {
    lines.push_back(line_of(record));
    if (lines.back().size() > kMaxRecordBytes) {
      throw std::invalid_argument("record too large to store");
    }
  }
  append_lines(records, std::move(lines));
}

void Database::append_lines(std::vector<Record> records, std::vector<std::string> lines) {
  if (records.empty()) return;
  std::vector<std::string> terminated;
  for (const std::string& line : lines) terminated.push_back(line + "\n");
  const bool created = !std::filesystem::exists(path_);
  int fd = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail(path_, "open");
  try {
    // Held from the torn-line check to the fsync, so no other writer's line
    // lands between them; released by close, or by the kernel if killed.
    lock_exclusive(fd, path_);
    if (ends_torn(fd)) terminated.front().insert(0, "\n");
    write_lines(fd, terminated, path_);
    if (::fsync(fd) != 0) fail(path_, "fsync");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (created) sync_directory_of(path_);
  for (size_t n = 0; n < records.size(); ++n) add(std::move(records[n]), std::move(lines[n]));
}

void Database::add(Record record, std::string line) {
  // Of equal times the later line wins, here and for generations: ISO 8601
  // UTC times order as text.
  auto [standing, first] = standing_.try_emplace(record.key(), records_.size());
  if (!first && record.time >= records_[standing->second].time) {
    standing->second = records_.size();
  }
  // Only a correct record makes its generation current: a new version's
  // failures, or a run killed before any result, leave the old winners.
  if (record.status == Status::ok && !record.estimate) {
    auto [newest, first_ok] = newest_.try_emplace(record.group());
    if (first_ok || record.time >= newest->second.time) {
      newest->second = {record.time, record.generation()};
    }
  }
  records_.push_back(std::move(record));
  lines_.push_back(std::move(line));
}

bool Database::is_current(size_t index) const {
  const Record& record = records_[index];
  if (standing_.at(record.key()) != index) return false;
  auto found = newest_.find(record.group());
  return found == newest_.end() || found->second.generation == record.generation();
}

const Record* Database::standing(const std::string& key) const {
  auto found = standing_.find(key);
  return found == standing_.end() ? nullptr : &records_[found->second];
}

std::vector<Record> Database::current_records() const {
  std::vector<Record> current;
  for (size_t n = 0; n < records_.size(); ++n) {
    if (is_current(n)) current.push_back(records_[n]);
  }
  return current;
}

std::set<std::string> Database::confirmed_groups() const {
  std::set<std::string> groups;
  for (size_t n = 0; n < records_.size(); ++n) {
    const Record& r = records_[n];
    if (r.confirmation && r.status == Status::ok && is_current(n)) groups.insert(r.group());
  }
  return groups;
}

bool Database::contends(size_t index, const std::set<std::string>& confirmed_groups) const {
  const Record& r = records_[index];
  if (r.estimate) return false;
  const RecordKind kind = r.kind();
  const bool searched_only =
      (kind == RecordKind::preset || kind == RecordKind::tuned) && !r.confirmation;
  return is_current(index) && !(searched_only && confirmed_groups.count(r.group()));
}

std::vector<Record> Database::contenders() const {
  const std::set<std::string> confirmed = confirmed_groups();
  std::vector<Record> contenders;
  for (size_t n = 0; n < records_.size(); ++n) {
    if (contends(n, confirmed)) contenders.push_back(records_[n]);
  }
  return contenders;
}

std::vector<const Record*> Database::fastest_per_group(
    const std::function<bool(const Record&)>& admits, bool estimates) const {
  const std::set<std::string> confirmed = confirmed_groups();
  std::map<std::tuple<std::string, std::string, std::string>, const Record*> fastest;
  for (size_t n = 0; n < records_.size(); ++n) {
    const Record& r = records_[n];
    const bool competes = estimates ? r.estimate && is_current(n) : contends(n, confirmed);
    if (r.status != Status::ok || !admits(r) || !competes) continue;
    const Record*& best = fastest[{r.spec, r.target, r.bucket}];
    if (!best || r.ms_median < best->ms_median) best = &r;
  }
  std::vector<const Record*> winners;
  for (const auto& [group, record] : fastest) winners.push_back(record);
  return winners;
}

namespace {

bool admitted(const WinnerFilter& filter, const Record& r) {
  return r.backward == filter.backward && (filter.target.empty() || r.target == filter.target) &&
         (filter.kinds.empty() || filter.kinds.count(r.kind())) &&
         (!filter.admits || filter.admits(r));
}

}  // namespace

std::vector<Record> Database::fastest_records(const WinnerFilter& filter, bool estimates) const {
  std::vector<Record> winners;
  for (const Record* r :
       fastest_per_group([&](const Record& r) { return admitted(filter, r); }, estimates)) {
    winners.push_back(*r);
  }
  return winners;
}

std::vector<Record> Database::winners(const WinnerFilter& filter) const {
  return fastest_records(filter, false);
}

std::vector<Record> Database::estimated_winners(const WinnerFilter& filter) const {
  return fastest_records(filter, true);
}

std::optional<Record> Database::best(const std::string& spec, const std::string& target,
                                     const std::string& bucket) const {
  std::vector<const Record*> best = fastest_per_group([&](const Record& r) {
    return !r.backward && r.spec == spec && r.target == target && r.bucket == bucket;
  });
  if (best.empty()) return std::nullopt;
  return *best.front();
}

size_t merge(Database& into, const Database& from) {
  // Compared as this version writes them: the same record from two copies
  // of a file matches even where one line carries unknown fields.
  std::set<std::string> present;
  for (const Record& r : into.records()) present.insert(line_of(r));
  std::vector<Record> fresh;
  std::vector<std::string> lines;
  for (size_t n = 0; n < from.records().size(); ++n) {
    if (!present.insert(line_of(from.records()[n])).second) continue;
    fresh.push_back(from.records()[n]);
    lines.push_back(from.lines()[n]);
  }
  const size_t added = fresh.size();
  into.append_lines(std::move(fresh), std::move(lines));
  return added;
}

}  // namespace attnforge::autotune
