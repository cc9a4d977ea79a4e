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

// Levels appear in the order graph, op, overlay.
constexpr bool levels_in_order() {
  int last = 0;
  for (const RuleEntry& r : kRules) {
    int level = static_cast<int>(r.info.level);
    if (level < last) return false;
    last = level;
  }
  return true;
}
static_assert(levels_in_order(), "rules.def: graph rules, then op rules, then overlays");

constexpr size_t default_index() {
  size_t i = 0;
  while (i < kRules.size() && kRules[i].info.level != RuleLevel::kOverlay) ++i;
  return i - 1;
}
static_assert(kRules[default_index()].info.id == std::string_view("DEFAULT"),
              "rules.def: DEFAULT must be the last op rule so every op matches a rule");

constexpr std::array<RuleInfo, kRules.size()> make_infos() {
  std::array<RuleInfo, kRules.size()> infos{};
  for (size_t i = 0; i < kRules.size(); ++i) infos[i] = kRules[i].info;
  return infos;
}
constexpr std::array kRuleInfos = make_infos();

}  // namespace

RuleMatch evaluate_rules(const RuleContext& ctx) {
  RuleMatch match;
  size_t i = 0;
  for (; i <= default_index(); ++i) {
    std::string detail;
    if (kRules[i].predicate(ctx, detail)) {
      match.rule = &kRules[i].info;
      match.detail = std::move(detail);
      break;
    }
  }
  if (!match.rule) match.rule = &kRules[default_index()].info;  // unreachable: DEFAULT matches
  if (match.rule->placement != Placement::kANE) return match;  // overlays only raise ANE verdicts
  for (i = default_index() + 1; i < kRules.size(); ++i) {
    std::string detail;
    if (kRules[i].predicate(ctx, detail)) {
      match.overlay = &kRules[i].info;
      match.overlay_detail = std::move(detail);
      break;
    }
  }
  return match;
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

const char* model_verdict_name(ModelVerdict v) {
  switch (v) {
    case ModelVerdict::kPass: return "pass";
    case ModelVerdict::kAtRisk: return "at risk";
    case ModelVerdict::kFail: return "fail";
  }
  return "fail";
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
