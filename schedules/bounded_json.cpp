#include "bounded_json.h"

#include <stdexcept>

namespace attnforge::schedules {

nlohmann::json parse_bounded_json(const std::string& text, const std::string& what) {
  if (text.size() > kMaxJsonBytes) {
    throw std::invalid_argument(what + ": " + std::to_string(text.size()) +
                                " bytes of JSON; at most " + std::to_string(kMaxJsonBytes));
  }
  // Nesting is checked before parsing, so no parser sees a deep document.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw std::invalid_argument(what + ": JSON nested deeper than " +
                                    std::to_string(kMaxJsonDepth) + " levels");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) throw std::invalid_argument(what + ": not JSON");
  return json;
}

}  // namespace attnforge::schedules
