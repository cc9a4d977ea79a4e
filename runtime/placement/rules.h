// First-match evaluation of the rule table (rules.def) for one op.
#pragma once

#include "placement/rule_predicates.h"

#include <string>

namespace sg::placement {

struct RuleMatch {
  const RuleInfo* rule = nullptr;
  std::string detail;
};
RuleMatch evaluate_rules(const RuleContext& ctx);

}  // namespace sg::placement
