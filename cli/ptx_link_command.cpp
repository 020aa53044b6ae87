// `attnforge ptx-link`: a kernel's PTX with the PTX functions linked in
// (kernel_support/ptx_functions.h), as the runtime loads it; for offline assembly
// (scripts/ptx-check) of kernels that call them.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "commands.h"
#include "kernel_support/ptx_functions.h"

namespace attnforge::cli {

namespace {

int run_ptx_link(const std::string& input, const std::string& output) {
  std::string ptx;
  if (input.empty() || input == "-") {
    ptx.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream file(input, std::ios::binary);
    if (!file) throw std::runtime_error(fmt::format("ptx-link: cannot read {}", input));
    ptx.assign(std::istreambuf_iterator<char>(file), {});
  }
  const std::string linked = link_ptx_functions(ptx);
  if (output.empty() || output == "-") {
    std::cout << linked;
  } else if (!(std::ofstream(output, std::ios::binary) << linked)) {
    throw std::runtime_error(fmt::format("ptx-link: cannot write {}", output));
  }
  return 0;
}

}  // namespace

Action add_ptx_link_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("ptx-link", "Link the PTX functions into a kernel's PTX, as it loads");
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  command->add_option("input", *input, "PTX file (default: standard input)");
  command->add_option("--out", *output, "where to write it (default: standard output)");
  return [=] { return *command ? run_ptx_link(*input, *output) : -1; };
}

}  // namespace attnforge::cli
