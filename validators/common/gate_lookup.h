// Where a tool finds its gate file when --gate is not given: beside the work it judges, never
// in the current directory. A command must give the same verdict from any directory.
#pragma once

#include "shardgate/status.h"

#include <string>
#include <vector>

namespace sg::cli {

// The gate file `name` (e.g. "residency.json") that governs `anchors` (shards, a chain
// manifest, a reference dump): for each anchor, the first `gates/<name>` found in the
// directory holding the anchor and then each parent, stopping after the repository root (the
// first directory that holds `.git`) or at the file-system root. "" when no anchor has one
// (the tool's built-in default applies). Anchors governed by different gate files (or one by a
// file and another by the default) are a usage error naming both: one run applies one policy.
Result<std::string> find_gate_file(const std::vector<std::string>& anchors, const std::string& name);

}  // namespace sg::cli
