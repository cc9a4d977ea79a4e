// A file's bytes in and out, for tests that write fixtures and read reports.
#pragma once

#include "shardgate/io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sg::testing {

// The file's bytes; a file that cannot be read fails the test and reads as "".
inline std::string slurp(const std::filesystem::path& path) {
  auto bytes = sg::read_file(path.string());
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  return bytes.is_ok() ? *bytes : std::string();
}

// Writes `bytes` as the whole file.
inline void spit(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace sg::testing
