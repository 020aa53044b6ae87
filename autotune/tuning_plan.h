// A plan: the tuning jobs one array job covers, one per line as
//   <spec> <B,H,Lq,Lk> [<target>]
// with '#' starting a comment. Each task of the array runs its share of
// every job (attnforge tune --plan FILE --shard auto).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attnforge::autotune {

struct PlannedJob {
  std::string spec;
  std::string shape;            // B,H,Lq,Lk
  std::string target = "host";  // a Halide target, or host
  int line = 0;                 // in the plan file, for messages
};

// Throws std::invalid_argument naming the file and line of a malformed job,
// or a plan with none.
std::vector<PlannedJob> read_plan(const std::filesystem::path& path);

}  // namespace attnforge::autotune
