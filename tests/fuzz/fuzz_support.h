// Shared by the libFuzzer targets (README "Fuzzing"): a scratch directory for readers that
// take a path, and the rule every target follows: an error Status is a normal outcome for a
// fuzzed input; only a crash, a sanitizer report, a leak, an exception escaping the reader or a
// hang is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sg::fuzz {

// A directory private to this process, created on first use and removed at exit.
const std::string& scratch_dir();

// Writes `bytes` to `relative` under scratch_dir() (creating parent directories) and returns
// the full path. A failure to write is the harness's own problem and aborts.
std::string write_scratch(const std::string& relative, std::string_view bytes);

// Removes `relative` under scratch_dir() if it exists.
void remove_scratch(const std::string& relative);

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}
inline std::span<const std::byte> as_bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

}  // namespace sg::fuzz
