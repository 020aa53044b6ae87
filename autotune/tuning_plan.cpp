#include "tuning_plan.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attnforge::autotune {

std::vector<PlannedJob> read_plan(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--plan: cannot read " + path.string());
  std::vector<PlannedJob> jobs;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    text = text.substr(0, text.find('#'));
    std::istringstream fields(text);
    PlannedJob job;
    job.line = line;
    if (!(fields >> job.spec)) continue;  // blank or comment
    std::string target, extra;
    if (fields >> job.shape && fields >> target) job.target = target;
    if (job.shape.empty() || fields >> extra) {
      throw std::invalid_argument(fmt::format(
          "--plan: {}:{}: '{}' is not '<spec> <B,H,Lq,Lk> [<target>]'", path.string(), line, text));
    }
    jobs.push_back(job);
  }
  if (jobs.empty()) throw std::invalid_argument("--plan: " + path.string() + " lists no job");
  return jobs;
}

}  // namespace attnforge::autotune
