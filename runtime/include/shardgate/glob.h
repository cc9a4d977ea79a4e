// Glob matching for names in gate files and overrides ("layer_00*.mlmodelc", "hidden.*").
// A core helper: the golden gate policy and the residency gate both match with it.
#pragma once

#include <string_view>

namespace sg {

// "*" (any run, also empty) and "?" (one character) matched over the whole string.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace sg
