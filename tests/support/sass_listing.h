// Offline checks of CUDA kernels' machine code: PTX (its PTX functions
// linked) assembled by ptxas and listed by nvdisasm, and the innermost loop
// of a listing. Tests that include this define ATTNFORGE_NVDISASM (empty
// where the toolkit has no nvdisasm).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "generators/cuda_launches.h"
#include "kernel_support/ptx_functions.h"

namespace attnforge::testing {

// The output of `command` (stderr too), nullopt when it fails.
inline std::optional<std::string> run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  if (pclose(pipe) != 0) return std::nullopt;
  return output;
}

// The SASS of `ptx` (its PTX functions linked) assembled for `arch` under
// the register limit kernels run with; nullopt when a tool fails.
inline std::optional<std::string> assembled_sass(const std::string& ptx, const std::string& name,
                                                 const std::string& arch) {
  const std::string source = ::testing::TempDir() + name + ".ptx";
  const std::string cubin = ::testing::TempDir() + name + "_" + arch + ".cubin";
  std::ofstream(source) << link_ptx_functions(ptx);
  if (!run_command(find_ptxas() + " -arch=" + arch + " " + ptxas_register_limit() + " " + source +
                   " -o " + cubin)) {
    return std::nullopt;
  }
  return run_command(std::string(ATTNFORGE_NVDISASM) + " -c " + cubin);
}

inline bool has_assembler_tools() {
  return !find_ptxas().empty() && !std::string(ATTNFORGE_NVDISASM).empty();
}

// The lines that contain `what`.
inline int count_lines(const std::vector<std::string>& lines, const std::string& what) {
  int n = 0;
  for (const std::string& line : lines) n += line.find(what) != std::string::npos;
  return n;
}

// Calls of functions (a call to a local label is how ptxas leaves a loop).
inline int function_calls(const std::vector<std::string>& lines) {
  int n = 0;
  for (const std::string& line : lines) {
    n += line.find("CALL") != std::string::npos && line.find("`(.L_x") == std::string::npos;
  }
  return n;
}

// The instructions of the innermost loop of an nvdisasm listing: from the
// label a backward branch goes to, to that branch. (A branch to itself is
// the trap after the last EXIT, not a loop.)
// With `containing`, the loop with the most lines containing it (the
// shortest of those): a divergent shuffle's slow path branches back into a
// loop from below it, which makes its own shorter "loop".
inline std::vector<std::string> hot_loop(const std::string& sass,
                                         const std::string& containing = "") {
  std::vector<std::string> lines;
  std::istringstream in(sass);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<std::string> best;
  for (size_t end = 0; end < lines.size(); ++end) {
    const size_t bra = lines[end].find("BRA `(");
    if (bra == std::string::npos) continue;
    const std::string label = lines[end].substr(bra + 6, lines[end].find(')', bra) - bra - 6);
    // The nearest label of that name above the branch (each kernel of a
    // listing numbers its labels from 0).
    for (size_t start = end; start-- > 0;) {
      if (lines[start].find(".text.") != std::string::npos) break;  // the kernel's start
      if (lines[start].rfind(label + ":", 0) != 0) continue;
      std::vector<std::string> loop(lines.begin() + start, lines.begin() + end + 1);
      const int has = containing.empty() ? 0 : count_lines(loop, containing);
      const int best_has = containing.empty() ? 0 : count_lines(best, containing);
      const bool better = has > best_has || (has == best_has && loop.size() < best.size());
      if (end - start >= 2 && (best.empty() || better)) best = loop;
      break;
    }
  }
  return best;
}

}  // namespace attnforge::testing
