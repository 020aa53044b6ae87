#include "tuned_schedules.h"

#include <Halide.h>

#include "autotune/database.h"

namespace attnforge::bench {

std::map<std::string, std::map<std::string, std::string>> tuned_schedules(
    const std::string& path, const std::string& target) {
  std::map<std::string, std::map<std::string, std::string>> tuned;
  std::map<std::pair<std::string, std::string>, double> fastest;
  const std::string host = target.empty() ? Halide::get_host_target().to_string() : target;
  const autotune::Database database(path);
  for (const autotune::Record& r : database.contenders()) {
    if (r.status != autotune::Status::ok || !r.schedule.is_object() || r.target != host) continue;
    auto key = std::make_pair(r.spec, r.bucket);
    auto found = fastest.find(key);
    if (found != fastest.end() && found->second <= r.ms_median) continue;
    fastest[key] = r.ms_median;
    tuned[r.spec][r.bucket] = r.schedule.dump();
  }
  return tuned;
}

}  // namespace attnforge::bench
