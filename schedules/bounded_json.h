// JSON from files and strings attnforge did not write (a tuning database, a
// schedule given on a command line) is parsed with limits, so a huge or deeply
// nested document is a clear error instead of exhausted memory or stack.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace attnforge::schedules {

constexpr size_t kMaxJsonBytes = 1 << 20;
constexpr int kMaxJsonDepth = 16;

// Throws std::invalid_argument naming `what` for text that is too large, too
// deeply nested or not JSON.
nlohmann::json parse_bounded_json(const std::string& text, const std::string& what);

}  // namespace attnforge::schedules
