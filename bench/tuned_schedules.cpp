#include "tuned_schedules.h"

#include <Halide.h>

#include "autotune/database.h"
#include "spec/shape_bucket.h"

namespace attnforge::bench {

TunedSchedules tuned_schedules(const std::string& path, const std::string& target) {
  using autotune::RecordKind;
  const std::string host = target.empty() ? Halide::get_host_target().to_string() : target;
  TunedSchedules tuned;
  for (const autotune::Record& r :
       autotune::Database(path).winners({host, {RecordKind::preset, RecordKind::tuned}, {}})) {
    tuned[r.spec][r.bucket] = r.schedule.dump();
  }
  return tuned;
}

std::optional<std::string> tuned_schedule_for(const TunedSchedules& tuned, const std::string& spec,
                                              int batch, int q_len, int kv_len) {
  auto buckets = tuned.find(spec);
  if (buckets == tuned.end() || buckets->second.empty()) return std::nullopt;
  auto own = buckets->second.find(shape_bucket(batch, q_len, kv_len));
  return (own != buckets->second.end() ? own : buckets->second.begin())->second;
}

}  // namespace attnforge::bench
