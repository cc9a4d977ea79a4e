#include "report/shard_names.h"

#include "shardgate/io.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

namespace sg::shard_names {
namespace {

// The last n components joined by '/'.
std::string suffix(const std::vector<std::string>& c, size_t n) {
  std::string out;
  for (size_t i = c.size() - n; i < c.size(); ++i) out += (out.empty() ? "" : "/") + c[i];
  return out;
}

struct Named {
  std::vector<std::vector<std::string>> parts;
  std::vector<size_t> needs;  // components that tell path i apart (at least 1 when it has any)
};

Named name_all(const std::vector<std::string>& paths) {
  Named n;
  std::map<std::string, size_t> ends;  // suffix -> how many paths end with it
  for (const std::string& p : paths) {
    n.parts.push_back(path_components(p));
    for (size_t k = 1; k <= n.parts.back().size(); ++k) ++ends[suffix(n.parts.back(), k)];
  }
  for (const auto& c : n.parts) {
    size_t k = 1;
    while (k < c.size() && ends[suffix(c, k)] > 1) ++k;
    n.needs.push_back(std::min(k, c.size()));
  }
  return n;
}

}  // namespace

std::vector<std::string> distinct(const std::vector<std::string>& paths) {
  const Named n = name_all(paths);
  std::vector<std::string> out;
  for (size_t i = 0; i < paths.size(); ++i) {
    out.push_back(n.parts[i].empty() ? paths[i] : suffix(n.parts[i], n.needs[i]));
  }
  return out;
}

Result<Pairing> pair(const std::vector<std::string>& old_paths, const std::string& old_report,
                     const std::vector<std::string>& new_paths, const std::string& new_report) {
  const Named o = name_all(old_paths), nw = name_all(new_paths);
  // A shard listed twice would pair two ways (or, from another directory, not at all).
  for (const auto& [named, paths, report] : {std::tuple{&o, &old_paths, &old_report}, {&nw, &new_paths, &new_report}}) {
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < paths->size(); ++i) {
      const std::string whole = suffix(named->parts[i], named->parts[i].size());
      SG_CHECK(seen.emplace(whole, i).second, ErrorCode::kUsage,
               "diff: {} names shard {} twice (shards {} and {}), so its shards cannot be paired "
               "with the other report's", *report, (*paths)[i], seen[whole], i);
    }
  }
  // Every suffix of an old path at least as long as its name, to the old shards ending so.
  std::map<std::string, std::vector<size_t>> old_by_end;
  for (size_t j = 0; j < old_paths.size(); ++j) {
    for (size_t k = o.needs[j]; k <= o.parts[j].size() && k > 0; ++k) old_by_end[suffix(o.parts[j], k)].push_back(j);
  }
  Pairing p;
  p.old_of_new.assign(new_paths.size(), std::nullopt);
  p.old_paired.assign(old_paths.size(), false);
  p.name_of_old = distinct(old_paths);
  p.name_of_new = distinct(new_paths);
  std::vector<std::optional<size_t>> new_of_old(old_paths.size());
  for (size_t i = 0; i < new_paths.size(); ++i) {
    // Old shard j matches when the paths share their last max(needs_i, needs_j) components:
    // one of the suffixes looked up below, of length >= needs_i, indexed for j at >= needs_j.
    std::optional<size_t> match;
    for (size_t k = nw.needs[i]; k <= nw.parts[i].size() && k > 0; ++k) {
      auto it = old_by_end.find(suffix(nw.parts[i], k));
      if (it == old_by_end.end()) continue;
      for (size_t j : it->second) {
        SG_CHECK(!match || *match == j, ErrorCode::kUsage,
                 "diff: {}'s shard {} ends like two shards of {}, {} and {}: pass the shards "
                 "by paths that tell them apart", new_report, new_paths[i], old_report,
                 old_paths[*match], old_paths[j]);
        match = j;
      }
    }
    if (!match) continue;
    SG_CHECK(!new_of_old[*match], ErrorCode::kUsage,
             "diff: {}'s shard {} ends like two shards of {}, {} and {}: pass the shards by "
             "paths that tell them apart", old_report, old_paths[*match], new_report,
             new_paths[*new_of_old[*match]], new_paths[i]);
    new_of_old[*match] = i;
    p.old_of_new[i] = match;
    p.old_paired[*match] = true;
    // The row says as much of the path as either report needs to tell the shard apart.
    p.name_of_new[i] = suffix(nw.parts[i], std::max(nw.needs[i], o.needs[*match]));
  }
  return p;
}

}  // namespace sg::shard_names
