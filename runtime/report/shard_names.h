// Shards named and matched by the end of their paths. Reports name a shard by its file name,
// but a model's shards often share one (`layers/00/model.mlpackage` … `layers/79/model.mlpackage`),
// so a name is the fewest trailing path components that no other shard of the same report ends
// with; and two reports' shards are paired by those ends, not by file name alone (which paired
// every `model.mlpackage` of one report with the last of the other and dropped the rest).
#pragma once

#include "shardgate/status.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sg::shard_names {

// For each path, the shortest run of its last components that no other path of the list ends
// with ("model.mlpackage", or "07/model.mlpackage" when another shard is also called
// model.mlpackage). A path no suffix distinguishes (listed twice, or ending another path
// whole) is named by all its components.
std::vector<std::string> distinct(const std::vector<std::string>& paths);

// The shards of two lists paired: old shard j and new shard i are the same shard when their
// paths end alike for at least as many components as either needs to be told apart from its
// own list's other shards. With distinct names that match is unique; a path listed twice in
// one report, which would pair two ways, is kUsage naming `report` and the path.
struct Pairing {
  std::vector<std::optional<size_t>> old_of_new;  // for new shard i: its old shard, or none
  std::vector<bool> old_paired;                   // old shard j has a new shard
  std::vector<std::string> name_of_new;           // row names: what tells the pair apart
  std::vector<std::string> name_of_old;
};
Result<Pairing> pair(const std::vector<std::string>& old_paths, const std::string& old_report,
                     const std::vector<std::string>& new_paths, const std::string& new_report);

}  // namespace sg::shard_names
