// Hand-made .npy headers, for tests of what the reader refuses (numpy would not write them).
#pragma once

#include <string>

namespace sg::testing {

// The magic, version 1.0 and `dict` padded with spaces and a newline so the data starts at a
// multiple of 64 bytes, as numpy writes it. The caller appends the data.
inline std::string npy_v1_header(std::string dict) {
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(dict.size() & 0xff);
  h += static_cast<char>(dict.size() >> 8);
  return h + dict;
}

}  // namespace sg::testing
