#include "run_seeds.h"

#include "schedules/layer_schedule.h"
#include "schedules/presets.h"
#include "spec/shape_bucket.h"

namespace attnforge::autotune {

namespace {

using schedules::Schedule;

// The winners this database holds for this target under other shape buckets
// of the spec, then under other specs, that fit this run's space: a start
// learned from related runs, proposed before the presets. A layer takes an
// attention winner with the target's projection defaults, an attention a
// layer winner's attention part.
std::vector<Schedule> related_winners(const TuneOptions& options, const Database& database,
                                      const schedules::ScheduleSpace& space) {
  constexpr size_t kMaxWinners = 4;
  const std::string spec = spec_key(options), target = options.target.to_string();
  const std::string bucket =
      shape_bucket(options.shape.batch, options.shape.q_len, options.shape.kv_len);
  const std::vector<Record> winners =
      database.winners({target, {RecordKind::preset, RecordKind::tuned}, [&](const Record& r) {
                          return r.spec != spec || r.bucket != bucket;  // not this run's own
                        }});
  std::vector<Schedule> same_spec, other_specs;
  for (const Record& record : winners) {
    Schedule s;
    try {
      s = Schedule::from_json(record.schedule);
    } catch (const schedules::ScheduleError&) {  // a schedule this version cannot read
      continue;
    }
    s = options.layer ? schedules::with_projection_defaults(s, options.target)
                      : schedules::attention_part(s);
    s = schedules::canonical(s);
    if (!space.contains(s)) continue;
    (record.spec == spec ? same_spec : other_specs).push_back(s);
  }
  same_spec.insert(same_spec.end(), other_specs.begin(), other_specs.end());
  if (same_spec.size() > kMaxWinners) same_spec.resize(kMaxWinners);
  return same_spec;
}

}  // namespace

std::map<std::string, std::string> fitting_presets(const TuneOptions& options) {
  std::map<std::string, std::string> presets;
  for (const std::string& name : schedules::presets_for(options.target)) {
    Schedule preset = schedules::load_preset(name);
    if (options.layer) preset = schedules::with_projection_defaults(preset, options.target);
    preset = schedules::canonical(preset);
    const bool fits = options.layer
                          ? !schedules::check_layer(preset, *options.layer, options.target)
                          : !schedules::check(preset, options.spec, options.target);
    if (fits) presets.emplace(preset.to_json().dump(), name);
  }
  return presets;
}

std::vector<Schedule> run_seeds(const TuneOptions& options, const Database& database,
                                const schedules::ScheduleSpace& space,
                                const std::map<std::string, std::string>& presets) {
  std::vector<Schedule> seeds = related_winners(options, database, space);
  for (const auto& [json, name] : presets)
    seeds.push_back(Schedule::from_json(nlohmann::json::parse(json)));
  return seeds;
}

}  // namespace attnforge::autotune
