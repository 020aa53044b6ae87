#include "summary.h"

#include <map>

namespace attnforge::autotune {

namespace {

void keep_faster(std::optional<Record>& slot, const Record& r) {
  if (!slot || r.ms_median < slot->ms_median) slot = r;
}

}  // namespace

std::vector<GroupSummary> summarize(const Database& database) {
  std::vector<GroupSummary> groups;
  std::map<std::string, size_t> index;
  auto group_of = [&](const Record& r) -> GroupSummary& {
    auto found = index.find(r.group());
    if (found == index.end()) {
      found = index.emplace(r.group(), groups.size()).first;
      groups.push_back({r.spec, r.target, r.bucket});
    }
    return groups[found->second];
  };
  for (const Record& r : database.current_records()) {
    GroupSummary& g = group_of(r);
    ++g.measured;
    if (r.status != Status::ok) ++g.failures;
  }
  for (const Record& r : database.contenders()) {
    if (r.status != Status::ok) continue;
    GroupSummary& g = group_of(r);
    if (r.schedule == "naive") {
      keep_faster(g.naive, r);
    } else if (r.schedule.is_string()) {
      keep_faster(g.best_autoscheduler, r);
    } else {
      keep_faster(g.best_tuned, r);
      if (r.strategy.rfind("preset:", 0) == 0) keep_faster(g.best_preset, r);
    }
  }
  return groups;
}

}  // namespace attnforge::autotune
