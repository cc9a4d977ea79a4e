// What both report merges check the same way: the slices given are slices 0..N-1 of one N,
// each exactly once.
#pragma once

#include "shardgate/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sg::merge_util {

struct SliceId {
  std::string file;
  int64_t index = 0;
  int64_t count = 1;
};

// kUsage naming the files: no report; counts that differ ("... is slice 1 of 4, ... slice 0 of
// 5"); one slice given twice (overlap); a slice missing.
Status check_slice_cover(const std::vector<SliceId>& slices);

// "a.json, b.json" for messages.
std::string files_text(const std::vector<SliceId>& slices);

}  // namespace sg::merge_util
