// GoogleTest parameter names from spec strings.
#pragma once

#include <string>

namespace attnforge::testing {

// A spec string as a test name: GoogleTest names allow no dots.
inline std::string test_name_of(std::string text) {
  for (char& c : text) {
    if (c == '.') c = '_';
  }
  return text;
}

}  // namespace attnforge::testing
