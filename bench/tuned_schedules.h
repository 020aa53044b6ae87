// The winners of a tuning database, as the benchmarks run them.
#pragma once

#include <map>
#include <string>

namespace attnforge::bench {

// The fastest correct schedule JSON per spec and shape bucket tuned for
// `target` (a Halide target string; empty: this machine's CPU), attention and
// layer specs alike.
std::map<std::string, std::map<std::string, std::string>> tuned_schedules(
    const std::string& path, const std::string& target = "");

}  // namespace attnforge::bench
