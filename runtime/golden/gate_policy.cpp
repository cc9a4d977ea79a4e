// Fidelity gate policies: gates/fidelity.json parsing, the built-in defaults, override
// resolution and the policy's JSON form (gate_policy.h).
#include "shardgate/gate_policy.h"

#include "core/json.h"
#include "shardgate/io.h"

#include <cmath>
#include <limits>

namespace sg {
namespace {

using json_util::Json;


// "min" → 0, "pN" → N with 0 < N < 50.
Result<double> parse_statistic(const Json& j, const std::string& path, const std::string& place) {
  SG_CHECK(j.is_string(), ErrorCode::kFormat, "{}: {}: expected \"min\" or \"pN\", got {}", path,
           place, j.type_name());
  const std::string s = j.get<std::string>();
  if (s == "min") return 0.0;
  if (s.size() > 1 && s[0] == 'p') {
    char* end = nullptr;
    const double v = std::strtod(s.c_str() + 1, &end);
    if (end && *end == '\0' && std::isfinite(v) && v > 0 && v < 50) return v;
  }
  return make_error(ErrorCode::kFormat,
                    "{}: {}: statistic '{}' must be \"min\" or \"pN\" with 0 < N < 50 (the bad "
                    "end of each metric is gated, never the mean)", path, place, s);
}

std::string statistic_name(double p) {
  if (p == 0) return "min";
  return fmt::format("p{}", p);
}

// The value of a threshold key: a number, or [lo, hi] for norm_ratio.
Status parse_threshold_value(Metric m, const Json& v, Threshold& t, const std::string& path,
                             const std::string& place) {
  if (m == Metric::kNormRatio) {
    SG_CHECK(v.is_array() && v.size() == 2, ErrorCode::kFormat,
             "{}: {}: expected [low, high], got {}", path, place, v.dump());
    SG_ASSIGN_OR_RETURN(double lo, json_util::as_number(v[0], path, place + "[0]"));
    SG_ASSIGN_OR_RETURN(double hi, json_util::as_number(v[1], path, place + "[1]"));
    SG_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo >= 0 && lo <= hi, ErrorCode::kFormat,
             "{}: {}: expected 0 <= low <= high, got [{}, {}]", path, place, lo, hi);
    t.bound = lo;
    t.upper = hi;
    return Status::ok();
  }
  SG_ASSIGN_OR_RETURN(double x, json_util::as_number(v, path, place));
  SG_CHECK(!std::isnan(x), ErrorCode::kFormat, "{}: {}: threshold is NaN", path, place);
  if (auto range = threshold_out_of_range(m, x)) {
    return make_error(ErrorCode::kFormat, "{}: {}: {} is out of range ({})", path, place, x, *range);
  }
  t.bound = x;
  return Status::ok();
}

Result<OverrideMatch> parse_match(const Json& j, const std::string& path, const std::string& place) {
  SG_TRY(json_util::expect_object(j, path, place));
  SG_TRY(json_util::check_keys(j, {"checkpoint", "kind", "layer", "shard"}, path, place));
  SG_CHECK(!j.empty(), ErrorCode::kFormat, "{}: {}: an empty match would apply everywhere; "
           "change the defaults instead", path, place);
  OverrideMatch m;
  for (const char* key : {"checkpoint", "kind", "shard"}) {
    if (!j.contains(key)) continue;
    SG_ASSIGN_OR_RETURN(std::string s, json_util::get_string(j, key, path, place));
    if (std::string_view(key) == "checkpoint") m.checkpoint = s;
    if (std::string_view(key) == "kind") m.kind = s;
    if (std::string_view(key) == "shard") m.shard = s;
  }
  if (j.contains("layer")) {
    const Json& l = j["layer"];
    const std::string lp = json_util::join(place, "layer");
    if (l.is_array()) {
      SG_CHECK(l.size() == 2, ErrorCode::kFormat, "{}: {}: expected [first, last]", path, lp);
      SG_ASSIGN_OR_RETURN(m.layer_min, json_util::as_int(l[0], path, lp + "[0]"));
      SG_ASSIGN_OR_RETURN(m.layer_max, json_util::as_int(l[1], path, lp + "[1]"));
      SG_CHECK(*m.layer_min <= *m.layer_max, ErrorCode::kFormat,
               "{}: {}: first layer {} is after last layer {}", path, lp, *m.layer_min,
               *m.layer_max);
    } else {
      SG_ASSIGN_OR_RETURN(int64_t layer, json_util::as_int(l, path, lp));
      m.layer_min = m.layer_max = layer;
    }
  }
  return m;
}

Json threshold_value_json(Metric m, const Threshold& t) {
  if (m == Metric::kNormRatio) {
    return Json::array({json_util::number(t.bound.value_or(0)),
                        json_util::number(t.upper.value_or(0))});
  }
  return json_util::number(t.bound.value_or(0));
}

Json match_json(const OverrideMatch& m) {
  Json j = Json::object();
  if (m.checkpoint) j["checkpoint"] = *m.checkpoint;
  if (m.kind) j["kind"] = *m.kind;
  if (m.layer_min && m.layer_max) {
    if (*m.layer_min == *m.layer_max) {
      j["layer"] = *m.layer_min;
    } else {
      j["layer"] = Json::array({*m.layer_min, *m.layer_max});
    }
  }
  if (m.shard) j["shard"] = *m.shard;
  return j;
}

}  // namespace

bool override_matches(const OverrideMatch& m, const CheckIdentity& id) {
  if (m.checkpoint && !glob_match(*m.checkpoint, id.checkpoint)) return false;
  if (m.kind && *m.kind != id.kind) return false;
  if (m.shard && !glob_match(*m.shard, id.shard)) return false;
  if (m.layer_min) {
    if (!id.layer || *id.layer < *m.layer_min || *id.layer > *m.layer_max) return false;
  }
  return true;
}

std::optional<std::string> threshold_out_of_range(Metric metric, double bound) {
  if (std::isnan(bound)) return std::string("a threshold is a number, not NaN");
  // The norm ratio's [low, high] pair is checked where it is parsed.
  if (metric == Metric::kNormRatio) return std::nullopt;
  const MetricInfo& info = metric_info(metric);
  if (!(bound >= info.range_lo && bound <= info.range_hi)) return std::string(info.range_text);
  return std::nullopt;
}

GatePolicy builtin_gate_policy() {
  GatePolicy policy;
  policy.description = "built-in defaults (equal to the defaults of gates/fidelity.json)";
  Threshold cos;
  cos.bound = 0.97;
  cos.reason = "product gate: cosine similarity of at least 0.97 against FP16 references, per "
               "layer and per position";
  cos.origin = "defaults";
  policy.defaults.at(Metric::kCosine) = cos;
  Threshold norm;
  norm.bound = 0.8;
  norm.upper = 1.25;
  norm.reason = "cosine ignores scale: a user's K-cache at cosine 0.973 (a field report) had "
                "already lost a third of its norm; a 20% scale error either way fails";
  norm.origin = "defaults";
  policy.defaults.at(Metric::kNormRatio) = norm;
  policy.defaults.percentile = 0;
  policy.defaults.percentile_reason = "gate on the worst position and layer, never the mean";
  return policy;
}

Result<GatePolicy> parse_gate_policy(std::string_view json_text, const std::string& path) {
  SG_ASSIGN_OR_RETURN(Json root, json_util::parse(json_text, path));
  SG_TRY(json_util::expect_object(root, path, ""));
  SG_TRY(json_util::check_keys(root, {"schema", "description", "topk", "defaults", "overrides"},
                               path, ""));
  SG_ASSIGN_OR_RETURN(std::string schema, json_util::get_string(root, "schema", path, ""));
  SG_CHECK(schema == kFidelityGateSchema, ErrorCode::kFormat,
           "{}: schema: expected \"{}\", got \"{}\"", path, kFidelityGateSchema, schema);
  GatePolicy policy;
  policy.source = path;
  SG_ASSIGN_OR_RETURN(policy.description,
                      json_util::get_string_or(root, "description", "", path, ""));
  if (root.contains("topk")) {
    SG_ASSIGN_OR_RETURN(int64_t k, json_util::as_int(root["topk"], path, "topk"));
    SG_CHECK(k >= 1, ErrorCode::kFormat, "{}: topk: must be at least 1, got {}", path, k);
    policy.topk = k;
  }

  SG_CHECK(root.contains("defaults"), ErrorCode::kFormat, "{}: missing key 'defaults'", path);
  const Json& defaults = root["defaults"];
  SG_TRY(json_util::expect_object(defaults, path, "defaults"));
  std::set<std::string> default_keys{"statistic"};
  for (const MetricInfo& k : metric_table()) default_keys.insert(k.gate_key);
  SG_TRY(json_util::check_keys(defaults, default_keys, path, "defaults"));
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    const std::string place = "defaults." + it.key();
    SG_TRY(json_util::expect_object(*it, path, place));
    SG_TRY(json_util::check_keys(*it, {"value", "reason"}, path, place));
    SG_ASSIGN_OR_RETURN(std::string reason, json_util::get_string(*it, "reason", path, place));
    SG_CHECK(!reason.empty(), ErrorCode::kFormat, "{}: {}.reason: must say why", path, place);
    SG_CHECK(it->contains("value"), ErrorCode::kFormat, "{}: {}: missing key 'value'", path, place);
    const Json& value = (*it)["value"];
    if (it.key() == "statistic") {
      SG_ASSIGN_OR_RETURN(policy.defaults.percentile, parse_statistic(value, path, place + ".value"));
      policy.defaults.percentile_reason = reason;
      continue;
    }
    if (value.is_null()) continue;  // documented as "not gated"
    for (const MetricInfo& k : metric_table()) {
      if (it.key() != k.gate_key) continue;
      Threshold t;
      t.reason = reason;
      t.origin = "defaults";
      SG_TRY(parse_threshold_value(k.metric, value, t, path, place + ".value"));
      policy.defaults.at(k.metric) = t;
    }
  }
  if (!policy.defaults.percentile) policy.defaults.percentile = 0;

  if (root.contains("overrides")) {
    const Json& overrides = root["overrides"];
    SG_CHECK(overrides.is_array(), ErrorCode::kFormat, "{}: overrides: expected an array, got {}",
             path, overrides.type_name());
    std::set<std::string> keys{"match", "reason", "statistic"};
    for (const MetricInfo& k : metric_table()) keys.insert(k.gate_key);
    for (size_t i = 0; i < overrides.size(); ++i) {
      const std::string place = json_util::index("overrides", i);
      const Json& o = overrides[i];
      SG_TRY(json_util::expect_object(o, path, place));
      SG_TRY(json_util::check_keys(o, keys, path, place));
      GateOverride ov;
      ov.origin = place;
      SG_ASSIGN_OR_RETURN(ov.reason, json_util::get_string(o, "reason", path, place));
      SG_CHECK(!ov.reason.empty(), ErrorCode::kFormat, "{}: {}.reason: must say why", path, place);
      SG_CHECK(o.contains("match"), ErrorCode::kFormat, "{}: {}: missing key 'match'", path, place);
      SG_ASSIGN_OR_RETURN(ov.match, parse_match(o["match"], path, place + ".match"));
      bool sets_something = false;
      if (o.contains("statistic")) {
        SG_ASSIGN_OR_RETURN(ov.thresholds.percentile,
                            parse_statistic(o["statistic"], path, place + ".statistic"));
        ov.thresholds.percentile_reason = ov.reason;
        sets_something = true;
      }
      for (const MetricInfo& k : metric_table()) {
        if (!o.contains(k.gate_key)) continue;
        Threshold t;
        t.reason = ov.reason;
        t.origin = place;
        if (!o[k.gate_key].is_null()) {
          SG_TRY(parse_threshold_value(k.metric, o[k.gate_key], t, path,
                                       json_util::join(place, k.gate_key)));
        }
        ov.thresholds.at(k.metric) = t;  // a null value switches the metric's gate off
        sets_something = true;
      }
      SG_CHECK(sets_something, ErrorCode::kFormat, "{}: {}: sets no threshold", path, place);
      policy.overrides.push_back(std::move(ov));
    }
  }
  return policy;
}

Result<GatePolicy> load_gate_policy(const std::string& path) {
  SG_ASSIGN_OR_RETURN(std::string text, read_file(path, limits::kGateFileBytes, "gate file"));
  SG_ASSIGN_OR_RETURN(GatePolicy policy, parse_gate_policy(text, path));
  policy.sha256 = sha256_hex(std::as_bytes(std::span<const char>(text.data(), text.size())));
  return policy;
}

std::string gate_policy_json(const GatePolicy& policy) {
  Json root = Json::object();
  root["schema"] = kFidelityGateSchema;
  root["description"] = policy.description;
  if (policy.topk) root["topk"] = *policy.topk;
  Json defaults = Json::object();
  defaults["statistic"] = {{"value", statistic_name(policy.defaults.percentile.value_or(0))},
                           {"reason", policy.defaults.percentile_reason.empty()
                                          ? std::string("gate on the worst row")
                                          : policy.defaults.percentile_reason}};
  for (const MetricInfo& k : metric_table()) {
    const auto& t = policy.defaults.at(k.metric);
    if (!t || !t->bound) continue;
    defaults[k.gate_key] = {{"value", threshold_value_json(k.metric, *t)},
                       {"reason", t->reason.empty() ? std::string("(no reason given)") : t->reason}};
  }
  root["defaults"] = defaults;
  Json overrides = Json::array();
  for (const GateOverride& ov : policy.overrides) {
    Json o = Json::object();
    o["match"] = match_json(ov.match);
    if (ov.thresholds.percentile) o["statistic"] = statistic_name(*ov.thresholds.percentile);
    for (const MetricInfo& k : metric_table()) {
      const auto& t = ov.thresholds.at(k.metric);
      if (!t) continue;
      o[k.gate_key] = t->bound ? threshold_value_json(k.metric, *t) : Json(nullptr);
    }
    o["reason"] = ov.reason;
    overrides.push_back(std::move(o));
  }
  root["overrides"] = overrides;
  return json_util::file_text(root);
}

MetricOptions policy_metric_options(const GatePolicy& policy, int64_t requested_topk) {
  MetricOptions o;
  if (requested_topk > 0) {
    o.topk = requested_topk;
  } else if (policy.topk) {
    o.topk = *policy.topk;
  }
  return o;
}

ResolvedThresholds resolve_thresholds(const GatePolicy& policy, const CheckIdentity& identity) {
  ResolvedThresholds r;
  r.metrics = policy.defaults.metrics;
  r.percentile = policy.defaults.percentile.value_or(0);
  for (const GateOverride& ov : policy.overrides) {
    if (!override_matches(ov.match, identity)) continue;
    for (size_t i = 0; i < kMetricCount; ++i) {
      const auto& t = ov.thresholds.metrics[i];
      if (!t) continue;
      if (t->bound) {
        r.metrics[i] = t;
      } else {
        r.metrics[i].reset();
      }
    }
    if (ov.thresholds.percentile) {
      r.percentile = *ov.thresholds.percentile;
      r.percentile_origin = ov.origin;
    }
  }
  return r;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kNotGated: return "not_gated";
    case Verdict::kDegenerate: return "degenerate";
    case Verdict::kUnstable: return "unstable";
    case Verdict::kExcluded: return "excluded";
    case Verdict::kNonfinite: return "nonfinite";
    case Verdict::kNoEvidence: return "no_evidence";
  }
  return "fail";
}

}  // namespace sg
