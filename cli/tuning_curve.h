// The tuning curve (best so far against time) of a database, drawn by
// scripts/plot_tuning_curve.py with matplotlib into a PNG next to it.
#pragma once

#include <filesystem>
#include <string>

namespace attnforge::cli {

// tuning.jsonl -> tuning.curve.png
std::filesystem::path tuning_curve_path(const std::filesystem::path& database);

// Runs the plotting script (no shell); returns false with a reason in `why`
// when Python, matplotlib or the script is missing or fails.
bool plot_tuning_curve(const std::filesystem::path& database, const std::filesystem::path& png,
                       std::string& why);

}  // namespace attnforge::cli
