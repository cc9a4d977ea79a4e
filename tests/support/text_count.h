// How often a text holds a needle (overlapping matches count), for tests that read tool output.
#pragma once

#include <cstddef>
#include <string>

namespace sg::testing {

inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace sg::testing
