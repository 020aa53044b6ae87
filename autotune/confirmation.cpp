#include "confirmation.h"

#include <algorithm>

namespace attnforge::autotune {

std::vector<std::string> pick_finalists(std::vector<Contender> contenders,
                                        const std::set<std::string>& confirmed, size_t count) {
  std::sort(contenders.begin(), contenders.end(), [](const Contender& a, const Contender& b) {
    return a.ms != b.ms ? a.ms < b.ms : a.key < b.key;
  });
  std::vector<std::string> finalists;
  double fastest_preset = 0.0;  // none yet
  for (const Contender& c : contenders) {
    if (confirmed.count(c.key)) continue;
    // Sorted by time: past the finalists and the presets' margin nothing more joins.
    const bool presets_done =
        !confirmed.empty() || (fastest_preset > 0.0 && c.ms > kPresetMargin * fastest_preset);
    if (finalists.size() >= count && presets_done) break;
    const bool contending_preset =
        c.preset && confirmed.empty() &&
        (fastest_preset == 0.0 || c.ms <= kPresetMargin * fastest_preset);
    if (c.preset && fastest_preset == 0.0) fastest_preset = c.ms;
    if (finalists.size() < count || contending_preset) finalists.push_back(c.key);
  }
  return finalists;
}

std::vector<std::string> pick_finalists(const std::map<std::string, Trial>& recorded,
                                        const std::map<std::string, std::string>& presets,
                                        const std::set<std::string>& confirmed, size_t count) {
  std::vector<Contender> contenders;
  for (const auto& [key, trial] : recorded) {
    if (trial.status != Status::ok) continue;
    contenders.push_back({key, trial.ms, presets.count(trial.schedule.to_json().dump()) != 0});
  }
  return pick_finalists(std::move(contenders), confirmed, count);
}

Outcome combine_rounds(const std::vector<Outcome>& rounds) {
  std::vector<double> medians;
  Outcome combined{Status::ok, 0, 0, 0, ""};
  for (const Outcome& round : rounds) {
    if (round.status != Status::ok) return round;
    medians.push_back(round.ms_median);
    combined.ms_min = medians.size() == 1 ? round.ms_min : std::min(combined.ms_min, round.ms_min);
    combined.ms_max = std::max(combined.ms_max, round.ms_max);
  }
  std::sort(medians.begin(), medians.end());
  const size_t n = medians.size();
  combined.ms_median = n % 2 ? medians[n / 2] : (medians[n / 2 - 1] + medians[n / 2]) / 2;
  combined.detail = "confirmed in " + std::to_string(n) + " rounds; medians (ms):";
  for (const Outcome& round : rounds) combined.detail += " " + std::to_string(round.ms_median);
  return combined;
}

std::vector<Outcome> measure_in_rounds(
    const std::vector<std::string>& keys, int rounds,
    const std::function<std::vector<Outcome>(const std::vector<std::string>&)>& measure) {
  std::vector<std::vector<Outcome>> measured(keys.size());
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> order;
    for (size_t n = 0; n < keys.size(); ++n) order.push_back(keys[(n + round) % keys.size()]);
    const std::vector<Outcome> outcomes = measure(order);
    for (size_t n = 0; n < keys.size(); ++n) {
      measured[(n + round) % keys.size()].push_back(outcomes[n]);
    }
  }
  std::vector<Outcome> combined;
  for (const std::vector<Outcome>& finalist : measured)
    combined.push_back(combine_rounds(finalist));
  return combined;
}

}  // namespace attnforge::autotune
