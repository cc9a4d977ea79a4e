#include "common/gate_lookup.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace sg::cli {
namespace {

namespace fs = std::filesystem;

// gates/<name> above one anchor ("" when none). The anchor itself may be a model directory
// (.mlpackage) or a file: the search starts at the directory that holds it.
std::string gate_above(const std::string& anchor, const std::string& name) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(anchor), ec).lexically_normal();
  if (ec) return "";
  if (dir.has_filename()) dir = dir.parent_path();
  else dir = dir.parent_path().parent_path();  // "a/b/" normalises to "a/b/" (empty filename)
  while (true) {
    const fs::path candidate = dir / "gates" / name;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (fs::exists(dir / ".git", ec)) return "";  // the repository root bounds the search
    if (!dir.has_parent_path() || dir.parent_path() == dir) return "";
    dir = dir.parent_path();
  }
}

}  // namespace

Result<std::string> find_gate_file(const std::vector<std::string>& anchors, const std::string& name) {
  auto named = [](const std::string& gate) {
    return gate.empty() ? std::string("the built-in default (no gates/ above it)") : gate;
  };
  std::string found;
  for (size_t i = 0; i < anchors.size(); ++i) {
    const std::string gate = gate_above(anchors[i], name);
    if (i == 0) {
      found = gate;
    } else if (gate != found) {
      return Status(ErrorCode::kUsage,
                    fmt::format("{} is governed by {} but {} by {}: one run applies one gate "
                                "policy (give --gate, or run them separately)",
                                anchors[0], named(found), anchors[i], named(gate)));
    }
  }
  return found;
}

}  // namespace sg::cli
