#include "report/shard_names.h"

#include "shardgate/io.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace sg::shard_names {
namespace {

struct Named {
  std::vector<std::string> tails;  // distinct_path_tails: what tells path i apart
  std::vector<size_t> parts;       // components of path i
  std::vector<size_t> needs;       // components of its tail
};

Named name_all(const std::vector<std::string>& paths) {
  Named n{distinct_path_tails(paths), {}, {}};
  for (size_t i = 0; i < paths.size(); ++i) {
    n.parts.push_back(path_components(paths[i]).size());
    n.needs.push_back(path_components(n.tails[i]).size());
  }
  return n;
}

// One shard of report `a` whose path ends like two shards of report `b`.
Status ends_like_two(const std::string& a, const std::string& path, const std::string& b,
                     const std::string& first, const std::string& second) {
  return make_error(ErrorCode::kUsage,
                    "diff: {}'s shard {} ends like two shards of {}, {} and {}: pass the shards by "
                    "paths that tell them apart", a, path, b, first, second);
}

}  // namespace

Result<Pairing> pair(const std::vector<std::string>& old_paths, const std::string& old_report,
                     const std::vector<std::string>& new_paths, const std::string& new_report) {
  const Named o = name_all(old_paths), nw = name_all(new_paths);
  // A shard listed twice would pair two ways (or, from another directory, not at all).
  for (const auto& [named, paths, report] : {std::tuple{&o, &old_paths, &old_report}, {&nw, &new_paths, &new_report}}) {
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < paths->size(); ++i) {
      const std::string whole = path_tail((*paths)[i], named->parts[i]);
      SG_CHECK(seen.emplace(whole, i).second, ErrorCode::kUsage,
               "diff: {} names shard {} twice (shards {} and {}), so its shards cannot be paired "
               "with the other report's", *report, (*paths)[i], seen[whole], i);
    }
  }
  // Every tail of an old path at least as long as its name, to the old shards ending so.
  std::map<std::string, std::vector<size_t>> old_by_end;
  for (size_t j = 0; j < old_paths.size(); ++j) {
    for (size_t k = std::max<size_t>(o.needs[j], 1); k <= o.parts[j]; ++k) old_by_end[path_tail(old_paths[j], k)].push_back(j);
  }
  Pairing p;
  p.old_of_new.assign(new_paths.size(), std::nullopt);
  p.old_paired.assign(old_paths.size(), false);
  p.name_of_old = o.tails;
  p.name_of_new = nw.tails;
  std::vector<std::optional<size_t>> new_of_old(old_paths.size());
  for (size_t i = 0; i < new_paths.size(); ++i) {
    // Old shard j matches when the paths share their last max(needs_i, needs_j) components:
    // one of the tails looked up below, of length >= needs_i, indexed for j at >= needs_j.
    std::optional<size_t> match;
    for (size_t k = std::max<size_t>(nw.needs[i], 1); k <= nw.parts[i]; ++k) {
      auto it = old_by_end.find(path_tail(new_paths[i], k));
      if (it == old_by_end.end()) continue;
      for (size_t j : it->second) {
        if (match && *match != j) return ends_like_two(new_report, new_paths[i], old_report, old_paths[*match], old_paths[j]);
        match = j;
      }
    }
    if (!match) continue;
    if (new_of_old[*match]) {
      return ends_like_two(old_report, old_paths[*match], new_report, new_paths[*new_of_old[*match]], new_paths[i]);
    }
    new_of_old[*match] = i;
    p.old_of_new[i] = match;
    p.old_paired[*match] = true;
    // The row says as much of the path as either report needs to tell the shard apart.
    p.name_of_new[i] = path_tail(new_paths[i], std::max(nw.needs[i], o.needs[*match]));
  }
  return p;
}

}  // namespace sg::shard_names
