// merge_slices.h: the slice cover check shared by both report merges.
#include "report/merge_slices.h"

#include "core/json.h"

#include <fmt/ranges.h>

#include <map>

namespace sg::merge_util {

std::string files_text(const std::vector<SliceId>& slices) {
  std::string out;
  for (const SliceId& s : slices) out += (out.empty() ? "" : ", ") + s.file;
  return out;
}

Status check_slice_cover(const std::vector<SliceId>& slices) {
  SG_CHECK(!slices.empty(), ErrorCode::kUsage, "merge: no report given");
  const SliceId& first = slices.front();
  std::map<int64_t, const SliceId*> by_index;
  for (const SliceId& s : slices) {
    SG_CHECK(s.count == first.count, ErrorCode::kUsage,
             "merge: {} is slice {} of {} but {} is slice {} of {}: slices of one run share "
             "their --shard-count",
             first.file, first.index, first.count, s.file, s.index, s.count);
    SG_CHECK(s.index >= 0 && s.index < s.count, ErrorCode::kUsage,
             "merge: {}: slice index {} is not in [0, {})", s.file, s.index, s.count);
    auto [it, fresh] = by_index.emplace(s.index, &s);
    SG_CHECK(fresh, ErrorCode::kUsage,
             "merge: overlapping slices: {} and {} are both slice {} of {}", it->second->file,
             s.file, s.index, s.count);
  }
  std::vector<int64_t> missing;
  for (int64_t i = 0; i < first.count; ++i) {
    if (!by_index.count(i)) missing.push_back(i);
  }
  SG_CHECK(missing.empty(), ErrorCode::kUsage,
           "merge: missing slice(s) {} of {}: no report given for them (given: {})",
           fmt::format("{}", fmt::join(missing, ", ")), first.count, files_text(slices));
  return Status::ok();
}

}  // namespace sg::merge_util
