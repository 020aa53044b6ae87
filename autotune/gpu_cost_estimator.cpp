#include "gpu_cost_estimator.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "spec/cuda_register_limit.h"
#include "subprocess.h"
#include "temp_dir.h"

namespace attnforge::autotune {

CostEstimator gpu_cost_estimator(const std::string& spec, const std::string& bucket) {
  // One folder for the run: its feature cache holds the kernels of this
  // build only, so no estimate comes from an older generator's kernels.
  auto run_folder = std::make_shared<TempDir>("attnforge_gpu_cost_");
  const std::string jobs = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  return [spec, bucket, run_folder, jobs](const std::vector<schedules::Schedule>& schedules) {
    const auto candidates = run_folder->path() / "candidates.jsonl";
    const auto estimates = run_folder->path() / "estimates.json";
    std::filesystem::remove(estimates);
    {
      std::ofstream out(candidates);
      for (const schedules::Schedule& s : schedules) out << s.to_json().dump() << '\n';
    }
    const int status = run_program(
        {ATTNFORGE_GPU_COST_MODEL, "rank", "--spec", spec, "--bucket", bucket, "--limit",
         std::to_string(kCudaRegisterLimit), "--candidates", candidates.string(), "--out",
         estimates.string(), "--generator", ATTNFORGE_GENERATOR, "--cache",
         (run_folder->path() / "features.json").string(), "--jobs", jobs});
    if (status != 0) {
      throw std::runtime_error(fmt::format(
          "the GPU cost model failed (exit {}){}; run {} rank by hand to see why", status,
          status == 77 ? ": it needs ptxas and nvdisasm" : "", ATTNFORGE_GPU_COST_MODEL));
    }
    const nlohmann::json result = nlohmann::json::parse(std::ifstream(estimates));
    std::vector<std::optional<double>> ms;
    for (const auto& value : result.at("estimates_ms")) {
      ms.push_back(value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt);
    }
    if (ms.size() != schedules.size()) {
      throw std::runtime_error("the GPU cost model returned a different number of estimates");
    }
    return ms;
  };
}

}  // namespace attnforge::autotune
