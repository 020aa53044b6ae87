#include "cuda_launches.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "jit_compile.h"

namespace attnforge {

namespace {

// A launch's shared size as Halide prints a constant one: digits, + and *.
std::optional<int> constant_bytes(const std::string& expr) {
  static const std::regex constant(R"([\d\s+*()]+)");
  if (!std::regex_match(expr, constant)) return std::nullopt;
  long sum = 0;
  std::string cleaned;
  for (char c : expr) {
    if (c != '(' && c != ')' && c != ' ') cleaned += c;
  }
  std::stringstream terms(cleaned);
  std::string term;
  while (std::getline(terms, term, '+')) {
    long product = 1;
    std::stringstream factors(term);
    std::string factor;
    while (std::getline(factors, factor, '*')) product *= std::stol(factor);
    sum += product;
  }
  return static_cast<int>(sum);
}

}  // namespace

std::vector<CudaLaunch> parse_cuda_launches(const std::string& stmt) {
  static const std::regex call(
      R"re(halide_cuda_run\(cuda\[0\], "([^"]+)", [^,]+, [^,]+, [^,]+, (\d+), (\d+), (\d+), ([^,]+),)re");
  std::vector<CudaLaunch> launches;
  for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), call); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    CudaLaunch launch;
    launch.kernel = m[1];
    launch.threads = std::stoi(m[2]) * std::stoi(m[3]) * std::stoi(m[4]);
    launch.shared_bytes = constant_bytes(m[5]);
    launches.push_back(launch);
  }
  return launches;
}

std::vector<CudaLaunch> cuda_launches(const std::string& spec, const std::string& schedule,
                                      const Halide::Target& target) {
  char path[] = "/tmp/attnforge-stmt-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) throw KernelError("cannot create a temporary file for the lowered statement");
  ::close(fd);
  try {
    auto generator =
        Halide::Internal::GeneratorRegistry::create("attention", Halide::GeneratorContext(target));
    generator->set_generatorparam_value("spec", spec);
    generator->set_generatorparam_value("schedule", schedule);
    Halide::Pipeline pipeline = generator->build_pipeline();
    pipeline.compile_to_lowered_stmt(path, pipeline.infer_arguments(), Halide::Text, target);
  } catch (const Halide::Error& error) {
    std::remove(path);
    throw KernelError("lowering " + spec + " for " + target.to_string() + ": " + error.what());
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return parse_cuda_launches(text.str());
}

}  // namespace attnforge
