// First-match evaluation of the rule table (rules.def) for one op, then its overlays.
#pragma once

#include "placement/rule_predicates.h"

#include <string>

namespace sg::placement {

struct RuleMatch {
  const RuleInfo* rule = nullptr;     // the graph- or op-level rule that decided
  std::string detail;
  const RuleInfo* overlay = nullptr;  // an overlay that raised an ANE verdict to ANE_RISK
  std::string overlay_detail;
};
RuleMatch evaluate_rules(const RuleContext& ctx);

}  // namespace sg::placement
