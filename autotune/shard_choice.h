// Which share of a tuning job this process takes: "i/n" as given, or "auto"
// from the job array of the cluster scheduler that started it, so one array
// job of n tasks covers a whole plan with no per-task arguments.
#pragma once

#include <functional>
#include <string>

namespace attnforge::autotune {

struct ShardChoice {
  int index = 0;  // 0 <= index < count
  int count = 1;
};

// Reads an environment variable; null where it is not set.
using Environment = std::function<const char*(const char*)>;

// "i/n", or "auto":
// - a Slurm job array: SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN (0 if
//   unset) of SLURM_ARRAY_TASK_COUNT (or MAX - MIN + 1) tasks, step 1;
// - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX of `count` tasks, from
//   --shard-count, else ATTNFORGE_SHARD_COUNT (the Job's completions).
// Throws std::invalid_argument naming --shard and what is missing or wrong.
ShardChoice parse_shard(const std::string& text, int count = 0,
                        const Environment& environment = std::getenv);

}  // namespace attnforge::autotune
