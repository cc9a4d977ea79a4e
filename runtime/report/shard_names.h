// Two reports' shards matched by the end of their paths. A model's shards often share a file
// name (`layers/00/model.mlpackage` … `layers/79/model.mlpackage`), so each report names a
// shard by the fewest trailing components no other of its shards ends with
// (distinct_path_tails, shardgate/io.h), and shards pair by those ends, not by file name
// alone (which paired every `model.mlpackage` of one report with the last of the other and
// dropped the rest).
#pragma once

#include "shardgate/status.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sg::shard_names {

// The shards of two lists paired: old shard j and new shard i are the same shard when their
// paths end alike for at least as many components as either needs to be told apart from its
// own list's other shards. With distinct names that match is unique; a path listed twice in
// one report, or ending like two of the other's, would pair two ways: kUsage naming both.
struct Pairing {
  std::vector<std::optional<size_t>> old_of_new;  // for new shard i: its old shard, or none
  std::vector<bool> old_paired;                   // old shard j has a new shard
  std::vector<std::string> name_of_new;           // row names: what tells the pair apart
  std::vector<std::string> name_of_old;
};
Result<Pairing> pair(const std::vector<std::string>& old_paths, const std::string& old_report,
                     const std::vector<std::string>& new_paths, const std::string& new_report);

}  // namespace sg::shard_names
