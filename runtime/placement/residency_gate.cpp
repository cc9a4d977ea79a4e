// The residency gate: policy file (gates/residency.json) and the verdict for one shard.
#include "core/json.h"
#include "shardgate/glob.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace sg {
namespace {

using json = json_util::Json;
using json_util::check_keys;

Result<double> read_pct(const json& j, const std::string& file, const std::string& where) {
  SG_CHECK(j.is_number(), ErrorCode::kFormat, "{}: {}: expected a percentage number", file, where);
  double v = j.get<double>();
  SG_CHECK(std::isfinite(v) && v >= 0.0 && v <= 100.0, ErrorCode::kFormat,
           "{}: {}: {} is not a percentage in [0, 100]", file, where, v);
  return v;
}

std::string op_label(const OpPlacement& op) {
  return fmt::format("{} '{}'", op.type, op.outputs.empty() ? std::string() : op.outputs[0]);
}

// "R22 x3: conv 'a', conv 'b', conv 'c'; G2 x1: cast 'x'" for the ops selected by `pick`.
template <typename Pick>
std::string group_by_rule(const std::vector<OpPlacement>& ops, Pick pick) {
  std::map<std::string, std::vector<std::string>> groups;
  std::vector<std::string> order;
  for (const OpPlacement& op : ops) {
    if (op.op_class != OpClass::kCompute || !pick(op)) continue;
    std::string rule = op.overlay_rule.empty() ? op.rule_id : op.rule_id + "+" + op.overlay_rule;
    std::string key = op.source == PlacementSource::kPlan
                          ? fmt::format("plan {} (rule {})", op.preferred.empty() ? "none" : op.preferred, rule)
                          : rule;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(op_label(op));
  }
  std::string out;
  for (const std::string& key : order) {
    const auto& names = groups[key];
    std::string list;
    for (size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 8) list += fmt::format(", ... ({} more)", names.size() - 8);
    out += fmt::format("{}{} x{}: {}", out.empty() ? "" : "; ", key, names.size(), list);
  }
  return out;
}

}  // namespace

ResidencyThreshold ResidencyPolicy::threshold_for(const std::string& shard_path) const {
  std::string file = filename.empty() ? std::string("built-in default") : filename;
  for (const Override& o : overrides) {
    // Matched against as many trailing components of the path as the glob has: the file
    // name, or "07/model.mlpackage" to pick one layer when every layer's file is model.mlpackage.
    const size_t parts = 1 + static_cast<size_t>(std::count(o.shard.begin(), o.shard.end(), '/'));
    if (glob_match(o.shard, path_tail(shard_path, parts))) {
      return ResidencyThreshold{o.min_residency_pct, fmt::format("{}: override '{}'", file, o.shard),
                                o.reason};
    }
  }
  return ResidencyThreshold{default_min_residency_pct,
                            filename.empty() ? file : fmt::format("{}: default", file),
                            default_reason};
}

namespace {

Result<std::string> read_reason(const json& o, const std::string& file, const std::string& where,
                                bool required) {
  if (!o.contains("reason")) {
    SG_CHECK(!required, ErrorCode::kFormat, "{}: {}.reason: every override needs a written reason",
             file, where);
    return std::string();
  }
  SG_ASSIGN_OR_RETURN(std::string reason, json_util::get_string(o, "reason", file, where));
  SG_CHECK(!reason.empty(), ErrorCode::kFormat, "{}: {}.reason: expected a non-empty string",
           file, where);
  return reason;
}

Result<std::string> read_glob(const json& j, const std::string& file, const std::string& where) {
  SG_CHECK(j.is_string() && !j.get<std::string>().empty(), ErrorCode::kFormat,
           "{}: {}: expected a non-empty shard name or glob", file, where);
  return j.get<std::string>();
}

// "overrides": each entry's threshold and required reason; `shard_glob` reads the entry's
// shard pattern, which the two forms keep in different places.
template <typename ShardGlob>
Status parse_overrides(const json& root, const std::string& file, ResidencyPolicy& policy,
                       ShardGlob shard_glob) {
  if (!root.contains("overrides")) return Status::ok();
  const json& overrides = root["overrides"];
  SG_CHECK(overrides.is_array(), ErrorCode::kFormat, "{}: overrides: expected an array", file);
  for (size_t i = 0; i < overrides.size(); ++i) {
    const json& o = overrides[i];
    const std::string where = fmt::format("overrides[{}]", i);
    SG_CHECK(o.is_object(), ErrorCode::kFormat, "{}: {}: expected an object", file, where);
    ResidencyPolicy::Override ov;
    SG_ASSIGN_OR_RETURN(ov.shard, shard_glob(o, where));
    SG_CHECK(o.contains("min_residency_pct"), ErrorCode::kFormat,
             "{}: {}: missing min_residency_pct", file, where);
    SG_ASSIGN_OR_RETURN(ov.min_residency_pct,
                        read_pct(o["min_residency_pct"], file, where + ".min_residency_pct"));
    SG_ASSIGN_OR_RETURN(ov.reason, read_reason(o, file, where, true));
    policy.overrides.push_back(std::move(ov));
  }
  return Status::ok();
}

// The form shared with gates/fidelity.json: "schema", "description", "defaults" holding
// {"value", "reason"} entries, "overrides" with a "match" object and a required reason.
Status parse_unified(const json& root, const std::string& file, ResidencyPolicy& policy) {
  SG_TRY(check_keys(root, {"schema", "description", "defaults", "overrides"}, file, ""));
  SG_CHECK(root["schema"] == kResidencyGateSchema, ErrorCode::kFormat,
           "{}: schema: expected \"{}\" (is this a residency policy?)", file, kResidencyGateSchema);
  if (root.contains("description")) {
    SG_TRY(json_util::get_string(root, "description", file, "").status());
  }
  SG_CHECK(root.contains("defaults") && root["defaults"].is_object(), ErrorCode::kFormat,
           "{}: defaults: expected an object with min_residency_pct", file);
  const json& defaults = root["defaults"];
  SG_TRY(check_keys(defaults, {"min_residency_pct"}, file, "defaults"));
  SG_CHECK(defaults.contains("min_residency_pct") && defaults["min_residency_pct"].is_object(),
           ErrorCode::kFormat,
           "{}: defaults.min_residency_pct: expected {{\"value\": PCT, \"reason\": \"...\"}}", file);
  const json& def = defaults["min_residency_pct"];
  SG_TRY(check_keys(def, {"value", "reason"}, file, "defaults.min_residency_pct"));
  SG_CHECK(def.contains("value"), ErrorCode::kFormat, "{}: defaults.min_residency_pct: missing value",
           file);
  SG_ASSIGN_OR_RETURN(policy.default_min_residency_pct,
                      read_pct(def["value"], file, "defaults.min_residency_pct.value"));
  SG_ASSIGN_OR_RETURN(policy.default_reason,
                      read_reason(def, file, "defaults.min_residency_pct", false));
  return parse_overrides(root, file, policy, [&](const json& o, const std::string& where)
                                                 -> Result<std::string> {
    SG_TRY(check_keys(o, {"match", "min_residency_pct", "reason"}, file, where));
    SG_CHECK(o.contains("match") && o["match"].is_object() && o["match"].contains("shard"),
             ErrorCode::kFormat, "{}: {}.match: expected {{\"shard\": GLOB}}", file, where);
    SG_TRY(check_keys(o["match"], {"shard"}, file, where + ".match"));
    return read_glob(o["match"]["shard"], file, where + ".match.shard");
  });
}

// The first form ("schema_version": 1, "gate", "default", "overrides" with "shard"), still read.
Status parse_version1(const json& root, const std::string& file, ResidencyPolicy& policy) {
  SG_CHECK(root["schema_version"] == 1, ErrorCode::kFormat, "{}: schema_version: expected 1", file);
  SG_ASSIGN_OR_RETURN(const std::string gate, json_util::get_string_or(root, "gate", "", file, ""));
  SG_CHECK(gate == "residency", ErrorCode::kFormat,
           "{}: gate: expected \"residency\" (is this a residency policy?)", file);
  SG_CHECK(root.contains("default") && root["default"].is_object(), ErrorCode::kFormat,
           "{}: default: expected an object with min_residency_pct", file);
  const json& def = root["default"];
  SG_CHECK(def.contains("min_residency_pct"), ErrorCode::kFormat,
           "{}: default: missing min_residency_pct", file);
  SG_ASSIGN_OR_RETURN(policy.default_min_residency_pct,
                      read_pct(def["min_residency_pct"], file, "default.min_residency_pct"));
  return parse_overrides(root, file, policy, [&](const json& o, const std::string& where)
                                                 -> Result<std::string> {
    SG_CHECK(o.contains("shard"), ErrorCode::kFormat,
             "{}: {}.shard: expected a non-empty shard name or glob", file, where);
    return read_glob(o["shard"], file, where + ".shard");
  });
}

}  // namespace

Result<ResidencyPolicy> parse_residency_policy(std::string_view text, const std::string& file) {
  SG_ASSIGN_OR_RETURN(const json root, json_util::parse(text, file));
  SG_CHECK(root.is_object(), ErrorCode::kFormat, "{}: expected a JSON object", file);
  ResidencyPolicy policy;
  policy.filename = file;
  if (root.contains("schema")) {
    SG_TRY(parse_unified(root, file, policy));
  } else if (root.contains("schema_version")) {
    SG_TRY(parse_version1(root, file, policy));
  } else {
    return make_error(ErrorCode::kFormat, "{}: schema: expected \"{}\" (is this a residency policy?)",
                      file, kResidencyGateSchema);
  }
  return policy;
}

Result<ResidencyPolicy> load_residency_policy(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::string text, read_file(path, limits::kGateFileBytes, "gate file"));
  return parse_residency_policy(text, path);
}

GateVerdict evaluate_residency_gate(const std::vector<OpPlacement>& ops,
                                    const ResidencySummary& summary,
                                    const std::vector<std::string>& plan_failures,
                                    const std::vector<ContractCheckResult>& checks,
                                    const ResidencyThreshold& threshold, bool strict) {
  GateVerdict v;
  if (!summary.residency_pct) {  // nullopt exactly when there is no body op
    v.failures.push_back(summary.compute_ops == 0
                             ? "no compute op in the shard: nothing was checked, so nothing passes"
                             : "no compute op besides boundary casts: nothing was checked, so "
                               "nothing passes");
  }
  for (const std::string& f : plan_failures) v.failures.push_back("plan: " + f);
  if (summary.residency_pct && *summary.residency_pct + 1e-9 < threshold.min_residency_pct) {
    v.failures.push_back(fmt::format(
        "residency {:.2f}% of the body < {:g}% ({}); off the ANE: {}", *summary.residency_pct,
        threshold.min_residency_pct, threshold.origin,
        group_by_rule(ops, [](const OpPlacement& op) {
          return !op.boundary_cast && !placement_on_ane(op.placement);
        })));
  }
  if (strict && summary.at_risk > 0) {
    v.failures.push_back(fmt::format(
        "strict: {} compute op(s) at risk: {}", summary.at_risk,
        group_by_rule(ops, [](const OpPlacement& op) { return op.placement == Placement::kANERisk; })));
  }
  // Boundary casts stay out of the residency, but one a plan measured on the CPU or GPU is a
  // fallback all the same: --strict fails it, as it fails a predicted at-risk one (G2a).
  const int64_t boundary_off = std::count_if(ops.begin(), ops.end(), [](const OpPlacement& op) {
    return op.boundary_cast && placement_is_fallback(op.placement);
  });
  if (strict && boundary_off > 0) {
    v.failures.push_back(fmt::format(
        "strict: {} boundary cast(s) off the ANE: {}", boundary_off,
        group_by_rule(ops, [](const OpPlacement& op) {
          return op.boundary_cast && placement_is_fallback(op.placement);
        })));
  }
  if (strict && summary.unknown > 0) {
    v.failures.push_back(fmt::format(
        "strict: {} compute op(s) with unknown placement: {}", summary.unknown,
        group_by_rule(ops, [](const OpPlacement& op) { return op.placement == Placement::kUnknown; })));
  }
  for (const ContractCheckResult& c : checks) {
    if (c.passed) continue;
    std::string names;
    for (size_t i = 0; i < c.offenders.size() && i < 8; ++i) names += (i ? "; " : "") + c.offenders[i];
    if (c.offenders.size() > 8) names += fmt::format("; ... ({} more)", c.offenders.size() - 8);
    v.failures.push_back(fmt::format("check {} failed: {}: {}", c.spec, c.detail, names));
  }
  v.passed = v.failures.empty();
  return v;
}

}  // namespace sg
