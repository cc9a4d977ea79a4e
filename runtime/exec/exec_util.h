// Small helpers of the executor that are not about running ops.
#pragma once

#include <string>
#include <vector>

namespace sg::exec {

// " (did you mean 'a', 'b'?)" listing up to five names close to `name` (small edit distance
// or containing it); "" when none is close.
std::string near_matches(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace sg::exec
