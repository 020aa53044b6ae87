#include "database.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

#include "schedules/bounded_json.h"

namespace attnforge::autotune {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what) {
  throw std::runtime_error("tuning database " + path.string() + ": " + what + ": " +
                           std::strerror(errno));
}

// Writes all of `text`; a short write (disk full) is an error, not a retry,
// so a line is never split across two writes.
void write_all(int fd, const std::string& text, const std::filesystem::path& path) {
  ssize_t written = ::write(fd, text.data(), text.size());
  if (written != static_cast<ssize_t>(text.size())) fail(path, "write");
}

// True when the file is non-empty and its last byte is not a newline: a
// killed writer left a torn line that the next record must not extend.
bool ends_torn(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size == 0) return false;
  char last = '\n';
  return ::pread(fd, &last, 1, info.st_size - 1) == 1 && last != '\n';
}

}  // namespace

Database::Database(std::filesystem::path path) : path_(std::move(path)) {
  reload();
}

void Database::reload() {
  records_.clear();
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
      add(Record::from_json(schedules::parse_bounded_json(line, "record")));
    } catch (const std::invalid_argument&) {
      ++skipped_;
    }
  }
}

void Database::append(const Record& record) {
  append(std::vector<Record>{record});
}

void Database::append(const std::vector<Record>& records) {
  std::string lines;
  for (const Record& record : records) {
    std::string line = record.to_json().dump() + "\n";
    if (line.size() > kMaxRecordBytes) throw std::invalid_argument("record too large to store");
    lines += line;
  }
  if (lines.empty()) return;
  int fd = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail(path_, "open");
  try {
    if (ends_torn(fd)) lines.insert(0, "\n");
    write_all(fd, lines, path_);
    if (::fsync(fd) != 0) fail(path_, "fsync");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  for (const Record& record : records) add(record);
}

void Database::add(Record record) {
  // Of equal times the later line wins, here and for generations: ISO 8601
  // UTC times order as text.
  auto [standing, first] = standing_.try_emplace(record.key(), records_.size());
  if (!first && record.time >= records_[standing->second].time) {
    standing->second = records_.size();
  }
  // Only a correct record makes its generation current: a new version's
  // failures, or a run killed before any result, leave the old winners.
  if (record.status == Status::ok) {
    auto [newest, first_ok] = newest_.try_emplace(record.group());
    if (first_ok || record.time >= newest->second.time) {
      newest->second = {record.time, record.generation()};
    }
  }
  records_.push_back(std::move(record));
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
  const bool searched_only = r.schedule.is_object() && !r.confirmation;
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

std::optional<Record> Database::best(const std::string& spec, const std::string& target,
                                     const std::string& bucket) const {
  const std::set<std::string> confirmed = confirmed_groups();
  const Record* best = nullptr;
  for (size_t n = 0; n < records_.size(); ++n) {
    const Record& r = records_[n];
    if (r.status != Status::ok || r.spec != spec || r.target != target || r.bucket != bucket ||
        !contends(n, confirmed)) {
      continue;
    }
    if (!best || r.ms_median < best->ms_median) best = &r;
  }
  if (!best) return std::nullopt;
  return *best;
}

size_t merge(Database& into, const Database& from) {
  std::set<std::string> present;
  for (const Record& r : into.records()) present.insert(r.to_json().dump());
  std::vector<Record> fresh;
  for (const Record& r : from.records()) {
    if (present.insert(r.to_json().dump()).second) fresh.push_back(r);
  }
  into.append(fresh);
  return fresh.size();
}

}  // namespace attnforge::autotune
