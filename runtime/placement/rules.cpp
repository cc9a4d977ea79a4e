// The rule table: rules.def expanded into an ordered array, and first-match evaluation.
#include "placement/rules.h"

#include <array>

namespace sg {
namespace placement {
namespace {

struct RuleEntry {
  RuleInfo info;
  RulePredicate predicate;
};

constexpr std::array kRules = {
#define SG_RULE(id, level, predicate, placement, confidence, source, reason)              \
  RuleEntry{RuleInfo{#id, RuleLevel::level, Placement::placement, Confidence::confidence, \
                     source, reason},                                                     \
            &pred_##predicate},
#include "placement/rules.def"
#undef SG_RULE
};

constexpr bool graph_rules_first() {
  bool seen_op_rule = false;
  for (const RuleEntry& r : kRules) {
    if (r.info.level == RuleLevel::kOp) seen_op_rule = true;
    if (r.info.level == RuleLevel::kGraph && seen_op_rule) return false;
  }
  return true;
}
static_assert(graph_rules_first(), "rules.def: graph-level rules must come before op rules");
static_assert(kRules.back().info.id == std::string_view("DEFAULT"),
              "rules.def: the DEFAULT rule must be last so every op matches a rule");

constexpr std::array<RuleInfo, kRules.size()> make_infos() {
  std::array<RuleInfo, kRules.size()> infos{};
  for (size_t i = 0; i < kRules.size(); ++i) infos[i] = kRules[i].info;
  return infos;
}
constexpr std::array kRuleInfos = make_infos();

}  // namespace

RuleMatch evaluate_rules(const RuleContext& ctx) {
  for (const RuleEntry& rule : kRules) {
    std::string detail;
    if (rule.predicate(ctx, detail)) return RuleMatch{&rule.info, std::move(detail)};
  }
  return RuleMatch{&kRules.back().info, {}};  // unreachable: DEFAULT always matches
}

}  // namespace placement

std::span<const RuleInfo> all_rules() { return placement::kRuleInfos; }

const RuleInfo* find_rule(std::string_view id) {
  for (const RuleInfo& r : placement::kRuleInfos) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::kANE: return "ANE";
    case Placement::kANERisk: return "ANE_RISK";
    case Placement::kCPU: return "CPU";
    case Placement::kGPU: return "GPU";
    case Placement::kGPUOrCPU: return "GPU_OR_CPU";
    case Placement::kNoDevice: return "NO_DEVICE";
    case Placement::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

bool placement_on_ane(Placement p) { return p == Placement::kANE || p == Placement::kANERisk; }

bool placement_is_fallback(Placement p) {
  return p == Placement::kCPU || p == Placement::kGPU || p == Placement::kGPUOrCPU;
}

const char* confidence_name(Confidence c) {
  switch (c) {
    case Confidence::kApple: return "A";
    case Confidence::kAppleCoreAI: return "A*";
    case Confidence::kUser: return "U";
    case Confidence::kFolklore: return "F";
  }
  return "F";
}

const char* placement_source_name(PlacementSource s) {
  return s == PlacementSource::kPlan ? "plan" : "predicted";
}

}  // namespace sg
