#include "shard_choice.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace attnforge::autotune {

namespace {

std::invalid_argument shard_error(const std::string& message) {
  return std::invalid_argument("--shard: " + message);
}

// An environment variable's integer value; nullopt where unset; throws where
// it is set to something else.
std::optional<int> integer_of(const Environment& environment, const char* name) {
  const char* text = environment(name);
  if (!text) return std::nullopt;
  int value = 0;
  char tail = 0;
  if (std::sscanf(text, "%d%c", &value, &tail) != 1) {
    throw shard_error(fmt::format("{}='{}' is not an integer", name, text));
  }
  return value;
}

ShardChoice checked(int index, int count, const std::string& source) {
  if (count < 1 || index < 0 || index >= count) {
    throw shard_error(
        fmt::format("{} gives task {} of {}; expected 0 <= task < count", source, index, count));
  }
  return {index, count};
}

ShardChoice from_slurm(const Environment& environment, int task) {
  const int min = integer_of(environment, "SLURM_ARRAY_TASK_MIN").value_or(0);
  const std::optional<int> step = integer_of(environment, "SLURM_ARRAY_TASK_STEP");
  if (step && *step != 1) {
    throw shard_error(fmt::format(
        "the Slurm array steps by {}; give it consecutive task ids (e.g. --array=0-7)", *step));
  }
  std::optional<int> count = integer_of(environment, "SLURM_ARRAY_TASK_COUNT");
  if (!count) {
    const std::optional<int> max = integer_of(environment, "SLURM_ARRAY_TASK_MAX");
    if (!max) {
      throw shard_error(
          "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor "
          "SLURM_ARRAY_TASK_MAX is");
    }
    count = *max - min + 1;
  }
  return checked(task - min, *count, "the Slurm array");
}

}  // namespace

ShardChoice parse_shard(const std::string& text, int count, const Environment& environment) {
  if (text != "auto") {
    int i = -1, n = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n) {
      throw shard_error("'" + text + "' is not i/n with 0 <= i < n, or auto");
    }
    return {i, n};
  }
  if (std::optional<int> task = integer_of(environment, "SLURM_ARRAY_TASK_ID")) {
    return from_slurm(environment, *task);
  }
  if (std::optional<int> index = integer_of(environment, "JOB_COMPLETION_INDEX")) {
    if (count == 0) count = integer_of(environment, "ATTNFORGE_SHARD_COUNT").value_or(0);
    if (count == 0) {
      throw shard_error(
          "a Kubernetes indexed job gives JOB_COMPLETION_INDEX but not the number of tasks; "
          "pass --shard-count or set ATTNFORGE_SHARD_COUNT to the Job's completions");
    }
    return checked(*index, count, "the Kubernetes indexed job");
  }
  throw shard_error(
      "auto found no Slurm job array (SLURM_ARRAY_TASK_ID) and no Kubernetes indexed job "
      "(JOB_COMPLETION_INDEX) in the environment; give i/n");
}

}  // namespace attnforge::autotune
