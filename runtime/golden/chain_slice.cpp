// Teacher-forced groups of a chain (chain.h): the units a CI fan-out of `run --teacher-forced`
// splits, so each job runs whole groups and never needs a tensor another job made.
#include "shardgate/chain.h"

#include <algorithm>
#include <map>

namespace sg {

std::string RunSlice::empty_note() const {
  return fmt::format("slice {} of {} selects none of the {} teacher-forced step groups: nothing "
                     "to check in this job",
                     index, count, groups_total);
}

Result<std::vector<SliceGroup>> teacher_forced_groups(const ChainManifest& chain,
                                                      const GoldenSource& goldens) {
  const size_t n = chain.steps.size();
  std::map<std::string, size_t> producer_index;
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& t : chain.steps[i].produced()) producer_index[t] = i;
  }
  // No cut may fall inside a dependency: a step reading another's (non-replaced) output joins
  // every step between them.
  std::vector<bool> joined(n, false);  // joined[k]: steps k and k+1 must share a group
  auto join = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) joined[k] = true;
  };
  for (size_t i = 0; i < n; ++i) {
    const ChainStep& step = chain.steps[i];
    SG_ASSIGN_OR_RETURN(auto forced, teacher_forced_inputs(chain, step, goldens));
    std::vector<std::string> read;
    if (step.is_combine) {
      read = step.combine_inputs;
    } else {
      for (const auto& [input, tensor] : step.inputs) {
        const bool replaced = std::any_of(forced.begin(), forced.end(),
                                          [&in = input](const auto& f) { return f.first == in; });
        if (!replaced) read.push_back(tensor);
      }
    }
    for (const std::string& t : read) {
      auto p = producer_index.find(t);
      if (p != producer_index.end() && p->second < i) join(p->second, i);
    }
  }
  // A state carried from step to step (a KV cache) ties every step that uses its key.
  std::map<std::string, std::pair<size_t, size_t>> state_span;
  for (size_t i = 0; i < n; ++i) {
    for (const auto& [name, key] : chain.steps[i].state) {
      auto [it, fresh] = state_span.emplace(key, std::make_pair(i, i));
      if (!fresh) it->second.second = i;
    }
  }
  for (const auto& [key, span] : state_span) join(span.first, span.second);

  std::vector<SliceGroup> groups;
  for (size_t i = 0; i < n; ++i) {
    if (groups.empty() || (i > 0 && !joined[i - 1])) {
      groups.push_back(SliceGroup{static_cast<int64_t>(groups.size()), {}});
    }
    groups.back().steps.push_back(chain.steps[i].id);
  }
  return groups;
}

}  // namespace sg
