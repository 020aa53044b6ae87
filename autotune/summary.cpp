#include "summary.h"

#include <map>

namespace attnforge::autotune {

std::vector<GroupSummary> summarize(const Database& database) {
  std::vector<GroupSummary> groups;
  std::map<std::string, size_t> index;
  auto group_of = [&](const Record& r) -> GroupSummary& {
    auto found = index.find(r.group());
    if (found == index.end()) {
      found = index.emplace(r.group(), groups.size()).first;
      groups.push_back({r.backward ? r.spec + " backward" : r.spec, r.target, r.bucket});
    }
    return groups[found->second];
  };
  for (const Record& r : database.current_records()) {
    GroupSummary& g = group_of(r);
    if (r.estimate) {
      ++g.estimated;
      continue;
    }
    ++g.measured;
    if (r.status != Status::ok) ++g.failures;
  }
  auto fill = [&](std::optional<Record> GroupSummary::*slot, const std::set<RecordKind>& kinds) {
    for (bool backward : {false, true}) {
      for (const Record& r : database.winners({"", kinds, {}, backward})) group_of(r).*slot = r;
    }
  };
  fill(&GroupSummary::naive, {RecordKind::naive});
  fill(&GroupSummary::best_autoscheduler, {RecordKind::autoscheduler});
  fill(&GroupSummary::best_tuned, {RecordKind::preset, RecordKind::tuned});
  fill(&GroupSummary::best_preset, {RecordKind::preset});
  for (const Record& r : database.estimated_winners()) group_of(r).best_estimate = r;
  return groups;
}

}  // namespace attnforge::autotune
