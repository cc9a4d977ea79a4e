#include "exec/exec_util.h"

#include <algorithm>

namespace sg::exec {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string near_matches(const std::string& name, const std::vector<std::string>& candidates) {
  std::vector<std::pair<size_t, std::string>> scored;
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(name, c);
    const bool contains = !name.empty() && (c.find(name) != std::string::npos ||
                                            name.find(c) != std::string::npos);
    if (d <= limit || contains) scored.emplace_back(contains ? std::min(d, limit) : d, c);
  }
  if (scored.empty()) return "";
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string s = " (did you mean ";
  for (size_t i = 0; i < scored.size() && i < 5; ++i) s += (i ? ", '" : "'") + scored[i].second + "'";
  return s + "?)";
}

}  // namespace sg::exec
