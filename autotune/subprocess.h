// Runs a program with arguments, without a shell (nothing in an argument is
// ever interpreted), and waits for it.
#pragma once

#include <string>
#include <vector>

namespace attnforge {

// The exit status, or -1 when the program could not start or did not exit.
int run_program(const std::vector<std::string>& argv);

// The same, with the program's standard output and error written to
// `output_file` (created or truncated).
int run_program(const std::vector<std::string>& argv, const std::string& output_file);

}  // namespace attnforge
