// The winners of a tuning database, as the benchmarks run them.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace attnforge::bench {

// spec -> shape bucket -> schedule JSON.
using TunedSchedules = std::map<std::string, std::map<std::string, std::string>>;

// The winning schedule (a preset or a searched one; Database::winners) per spec
// and shape bucket tuned for `target` (a Halide target string; empty: this
// machine's CPU), attention and layer specs alike.
TunedSchedules tuned_schedules(const std::string& path, const std::string& target = "");

// The tuned schedule that runs `spec` at a shape: its own shape bucket's, else
// the spec's first bucket's (a schedule fits any shape of its spec); none when
// the spec was not tuned.
std::optional<std::string> tuned_schedule_for(const TunedSchedules& tuned, const std::string& spec,
                                              int batch, int q_len, int kv_len);

}  // namespace attnforge::bench
