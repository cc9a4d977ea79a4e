// Gate policies: gates/fidelity.json parses and equals the built-in defaults, overrides match
// by checkpoint / kind / layer / shard and carry reasons, malformed policies are refused with
// the place named, and percentile gating differs from min gating exactly where it should.
#include "shardgate/gate_policy.h"
#include "shardgate/io.h"

#include <gtest/gtest.h>

namespace sg {
namespace {

std::string policy_text(const std::string& defaults_extra, const std::string& overrides) {
  return R"({"schema": "shardgate/fidelity-gate@1", "defaults": {
      "min_cosine": {"value": 0.97, "reason": "product gate"})" +
         defaults_extra + R"(}, "overrides": [)" + overrides + "]}";
}

CheckIdentity check_id(const std::string& name, const std::string& kind,
                       std::optional<int64_t> layer, const std::string& shard = "") {
  CheckIdentity id;
  id.checkpoint = name;
  id.kind = kind;
  id.layer = layer;
  id.shard = shard;
  return id;
}

// A check of `n` rows with the given cosines (norm ratio 1).
CheckResult rows_with_cosines(const std::string& name, std::optional<int64_t> layer,
                              const std::vector<double>& cosines) {
  CheckResult c;
  c.identity = check_id(name, "hidden", layer);
  c.position_axis = 1;
  for (size_t p = 0; p < cosines.size(); ++p) {
    RowResult r;
    r.position = static_cast<int64_t>(p);
    r.value(Metric::kCosine) = cosines[p];
    r.value(Metric::kNormRatio) = 1.0;
    c.rows.push_back(r);
  }
  return c;
}

TEST(GatePolicy, RepoPolicyParsesAndKeepsTheProductDefaults) {
  auto p = load_gate_policy(SG_SOURCE_DIR "/gates/fidelity.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  const GatePolicy builtin = builtin_gate_policy();
  for (Metric m : {Metric::kCosine, Metric::kNormRatio}) {
    ASSERT_TRUE(p->defaults.at(m).has_value()) << metric_name(m);
    EXPECT_EQ(p->defaults.at(m)->bound, builtin.defaults.at(m)->bound) << metric_name(m);
    EXPECT_EQ(p->defaults.at(m)->upper, builtin.defaults.at(m)->upper) << metric_name(m);
    EXPECT_FALSE(p->defaults.at(m)->reason.empty());
  }
  EXPECT_EQ(p->defaults.percentile, 0.0);
  EXPECT_EQ(p->sha256.size(), 64u);
  for (const GateOverride& o : p->overrides) EXPECT_FALSE(o.reason.empty());
}

TEST(GatePolicy, TopKIsTheCallersElseThePolicysElseTheDefault) {
  auto policy = parse_gate_policy(R"({"schema": "shardgate/fidelity-gate@1", "topk": 2,
      "defaults": {"min_cosine": {"value": 0.97, "reason": "product gate"}}, "overrides": []})",
                                  "g.json");
  ASSERT_TRUE(policy.is_ok()) << policy.status().to_string();
  EXPECT_EQ(policy_metric_options(*policy).topk, 2);
  EXPECT_EQ(policy_metric_options(*policy, 7).topk, 7);
  EXPECT_EQ(policy_metric_options(builtin_gate_policy()).topk, MetricOptions{}.topk);
  EXPECT_EQ(policy_metric_options(builtin_gate_policy(), 3).topk, 3);
}

TEST(GatePolicy, OverridesMatchByCheckpointLayerKindAndShard) {
  const std::string text = policy_text("", R"(
    {"match": {"checkpoint": "hidden.*", "layer": [2, 3]}, "min_cosine": 0.95,
     "reason": "layers 2-3 hold the outlier experts; accepted at 0.95 until re-quantized"},
    {"match": {"kind": "logits"}, "min_cosine": 0.99, "reason": "logits stricter"},
    {"match": {"shard": "L7_*"}, "min_cosine": null, "reason": "L7 is measured elsewhere"})");
  auto p = parse_gate_policy(text, "gate.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  auto cos = [&](const CheckIdentity& id) {
    const std::optional<Threshold> t = resolve_thresholds(*p, id).at(Metric::kCosine);
    return t ? *t->bound : -1.0;
  };
  EXPECT_EQ(cos(check_id("hidden.1", "hidden", 1)), 0.97);
  EXPECT_EQ(cos(check_id("hidden.2", "hidden", 2)), 0.95);
  EXPECT_EQ(cos(check_id("hidden.3", "hidden", 3)), 0.95);
  EXPECT_EQ(cos(check_id("hidden.4", "hidden", 4)), 0.97);
  EXPECT_EQ(cos(check_id("kv.2", "state", 2)), 0.97);  // name does not match the glob
  EXPECT_EQ(cos(check_id("logits", "logits", std::nullopt)), 0.99);
  EXPECT_EQ(cos(check_id("hidden.7", "hidden", 7, "L7_attn")), -1.0);  // switched off
  const ResolvedThresholds resolved = resolve_thresholds(*p, check_id("hidden.2", "hidden", 2));
  const auto& t = resolved.at(Metric::kCosine);
  EXPECT_EQ(t->origin, "overrides[0]");
  EXPECT_NE(t->reason.find("outlier experts"), std::string::npos);
}

TEST(GatePolicy, OverrideWithReasonDecidesTheVerdict) {
  auto p = parse_gate_policy(policy_text("", R"({"match": {"layer": 2}, "min_cosine": 0.95,
      "reason": "known outliers"})"), "gate.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  FidelityRun run;
  run.checks.push_back(rows_with_cosines("hidden.2", 2, {0.99, 0.96}));
  run.checks.push_back(rows_with_cosines("hidden.3", 3, {0.99, 0.96}));
  auto ev = evaluate_gate(run, *p);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->checks[0].verdict, Verdict::kPass);
  EXPECT_EQ(ev->checks[1].verdict, Verdict::kFail);
  EXPECT_EQ(ev->checks[1].first_failing_position, 1);
}

// A check whose every threshold is switched off (gates/fidelity.json does so for an MoE pack's
// partial sum) is measured and reported but judged by nothing: it is neither passed nor failed,
// and a run of only such checks has no evidence, so it cannot pass.
TEST(GatePolicy, ACheckNoThresholdAppliesToIsNotGatedAndNeverCountsAsPassed) {
  auto p = parse_gate_policy(policy_text(R"(, "norm_ratio": {"value": [0.8, 1.25], "reason": "scale"})",
                                         R"({"match": {"kind": "partial_sum"}, "min_cosine": null,
      "norm_ratio": null, "reason": "one share of a sum"})"), "gate.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  CheckResult share = rows_with_cosines("moe_out", 0, {0.10, -0.25});  // would fail if gated
  share.identity.kind = "partial_sum";
  FidelityRun run;
  run.checks.push_back(share);
  run.checks.push_back(rows_with_cosines("hidden.0", 0, {0.99, 0.98}));
  auto ev = evaluate_gate(run, *p);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->checks[0].verdict, Verdict::kNotGated) << ev->checks[0].message;
  for (const RowVerdict& r : ev->checks[0].rows) EXPECT_EQ(r.verdict, Verdict::kNotGated);
  EXPECT_EQ(ev->checks[1].verdict, Verdict::kPass);
  EXPECT_EQ(ev->summary.verdict, Verdict::kPass) << ev->summary.message;
  EXPECT_EQ(ev->summary.checks, 1);
  EXPECT_EQ(ev->summary.passed, 1);
  EXPECT_EQ(ev->summary.not_gated, 1);
  EXPECT_NE(ev->summary.message.find("1 check measured, not gated"), std::string::npos) << ev->summary.message;

  // Only the share: nothing judged, no pass.
  run.checks.pop_back();
  auto alone = evaluate_gate(run, *p);
  ASSERT_TRUE(alone.is_ok());
  EXPECT_EQ(alone->summary.verdict, Verdict::kNoEvidence) << alone->summary.message;
  EXPECT_EQ(alone->summary.passed, 0);
  EXPECT_NE(alone->summary.message.find("no check was judged"), std::string::npos) << alone->summary.message;

  // A policy with every threshold off judges nothing either, whatever the check.
  auto off = parse_gate_policy(R"({"schema": "shardgate/fidelity-gate@1", "defaults": {
      "min_cosine": {"value": null, "reason": "off"}, "norm_ratio": {"value": null, "reason": "off"}}})",
                               "off.json");
  ASSERT_TRUE(off.is_ok()) << off.status().to_string();
  run.checks.push_back(rows_with_cosines("hidden.0", 0, {0.99, 0.98}));
  auto none = evaluate_gate(run, *off);
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none->summary.verdict, Verdict::kNoEvidence) << none->summary.message;
  EXPECT_EQ(none->summary.not_gated, 2);
}

TEST(GatePolicy, MalformedPoliciesAreRefusedWithThePlace) {
  struct Case {
    std::string text, needle;
  };
  const std::vector<Case> cases = {
      {R"({"schema": "other", "defaults": {}})", "schema"},
      {policy_text("", R"({"match": {"layer": 1}, "min_cosine": 0.9})"), "overrides[0]: missing key 'reason'"},
      {policy_text("", R"({"match": {"layer": 1}, "min_cosine": 0.9, "reason": ""})"), "overrides[0].reason"},
      {policy_text("", R"({"match": {}, "min_cosine": 0.9, "reason": "x"})"), "empty match"},
      {policy_text("", R"({"match": {"layer": 1}, "reason": "x"})"), "sets no threshold"},
      {policy_text("", R"({"match": {"layr": 1}, "min_cosine": 0.9, "reason": "x"})"), "unknown key 'layr'"},
      {policy_text(R"(, "min_cosin": {"value": 1, "reason": "x"})", ""), "unknown key 'min_cosin'"},
      {policy_text(R"(, "norm_ratio": {"value": [1.25, 0.8], "reason": "x"})", ""), "low <= high"},
      {policy_text(R"(, "statistic": {"value": "p60", "reason": "x"})", ""), "0 < N < 50"},
      {policy_text(R"(, "statistic": {"value": "mean", "reason": "x"})", ""), "never the mean"},
      {R"({"schema": "shardgate/fidelity-gate@1", "defaults": {"min_cosine": {"value": 0.97}}})", "missing key 'reason'"},
      {R"({"schema": "shardgate/fidelity-gate@1", "defaults": )", "invalid JSON"},
  };
  for (const Case& c : cases) {
    auto p = parse_gate_policy(c.text, "gates/x.json");
    ASSERT_FALSE(p.is_ok()) << c.text;
    EXPECT_EQ(p.status().code(), ErrorCode::kFormat);
    EXPECT_NE(p.status().message().find("gates/x.json"), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find(c.needle), std::string::npos) << p.status().message();
  }
}

// A bound outside its metric's range in a gate FILE is an input error naming the file and the
// key, as on the command line (before: {"min_cosine": 2} parsed and silently failed every check).
TEST(GatePolicy, OutOfRangeThresholdsInTheFileAreRefusedNamingTheKey) {
  struct Case {
    std::string text, needle;
  };
  const std::vector<Case> cases = {
      {R"({"schema": "shardgate/fidelity-gate@1", "defaults": {"min_cosine": {"value": 2, "reason": "x"}}})",
       "defaults.min_cosine.value: 2 is out of range (a cosine lies in [-1, 1])"},
      {R"({"schema": "shardgate/fidelity-gate@1", "defaults": {"min_cosine": {"value": -1.5, "reason": "x"}}})",
       "defaults.min_cosine.value: -1.5 is out of range"},
      {policy_text(R"(, "max_rel_l2": {"value": -0.1, "reason": "x"})", ""),
       "defaults.max_rel_l2.value: -0.1 is out of range (a relative L2 error is >= 0)"},
      {policy_text(R"(, "max_abs": {"value": -1, "reason": "x"})", ""), "defaults.max_abs.value"},
      {policy_text(R"(, "max_kl": {"value": -0.5, "reason": "x"})", ""), "a KL divergence is >= 0"},
      {policy_text(R"(, "norm_ratio": {"value": [-0.1, 1.2], "reason": "x"})", ""), "0 <= low <= high"},
      {policy_text("", R"({"match": {"kind": "logits"}, "min_top1": 1.5, "reason": "x"})"),
       "overrides[0].min_top1: 1.5 is out of range (a top-1 agreement rate lies in [0, 1])"},
      {policy_text("", R"({"match": {"kind": "logits"}, "min_topk_overlap": -0.2, "reason": "x"})"),
       "overrides[0].min_topk_overlap"},
      {policy_text("", R"({"match": {"layer": 1}, "min_cosine": 1.01, "reason": "x"})"),
       "overrides[0].min_cosine: 1.01 is out of range"},
      {policy_text("", R"({"match": {"layer": 1}, "statistic": "p100", "reason": "x"})"),
       "overrides[0].statistic: statistic 'p100' must be \"min\" or \"pN\" with 0 < N < 50"},
      {policy_text("", R"({"match": {"layer": 1}, "statistic": "p-5", "reason": "x"})"), "0 < N < 50"},
  };
  for (const Case& c : cases) {
    auto p = parse_gate_policy(c.text, "gates/x.json");
    ASSERT_FALSE(p.is_ok()) << c.text;
    EXPECT_EQ(p.status().code(), ErrorCode::kFormat);
    EXPECT_EQ(p.status().message().rfind("gates/x.json: ", 0), 0u) << p.status().message();
    EXPECT_NE(p.status().message().find(c.needle), std::string::npos) << p.status().message();
  }
  // The edges of each range are possible values.
  for (const char* ok : {R"(, "max_rel_l2": {"value": 0, "reason": "x"})",
                         R"(, "min_snr_db": {"value": -20, "reason": "x"})"}) {
    EXPECT_TRUE(parse_gate_policy(policy_text(ok, ""), "g.json").is_ok()) << ok;
  }
  EXPECT_TRUE(parse_gate_policy(policy_text("", R"({"match": {"layer": 1}, "min_cosine": -1, "reason": "x"})"), "g.json").is_ok());
  EXPECT_TRUE(parse_gate_policy(policy_text("", R"({"match": {"layer": 1}, "min_cosine": 1, "reason": "x"})"), "g.json").is_ok());
}

TEST(GatePolicy, PercentileGatesDifferentlyFromMin) {
  // 20 positions: one outlier at 0.50, the rest at 0.99. min → fail; p5 of 20 values:
  // rank 0.95 → 0.50 + 0.95·0.49 = 0.9655 → still fails; p10: rank 1.9 → 0.99 → pass.
  std::vector<double> cos(20, 0.99);
  cos[7] = 0.50;
  FidelityRun run;
  run.checks.push_back(rows_with_cosines("hidden.0", 0, cos));
  GatePolicy policy = builtin_gate_policy();
  auto ev_min = evaluate_gate(run, policy);
  ASSERT_TRUE(ev_min.is_ok());
  EXPECT_EQ(ev_min->checks[0].verdict, Verdict::kFail);
  EXPECT_EQ(ev_min->checks[0].metrics[0].statistic, "min");
  EXPECT_DOUBLE_EQ(*ev_min->checks[0].metrics[0].value, 0.50);
  EXPECT_EQ(ev_min->checks[0].metrics[0].worst_position, 7);

  policy.defaults.percentile = 5;
  auto ev_p5 = evaluate_gate(run, policy);
  ASSERT_TRUE(ev_p5.is_ok());
  EXPECT_EQ(ev_p5->checks[0].metrics[0].statistic, "p5");
  EXPECT_NEAR(*ev_p5->checks[0].metrics[0].value, 0.50 + 0.95 * 0.49, 1e-12);
  EXPECT_EQ(ev_p5->checks[0].verdict, Verdict::kFail);

  policy.defaults.percentile = 10;
  auto ev_p10 = evaluate_gate(run, policy);
  ASSERT_TRUE(ev_p10.is_ok());
  EXPECT_DOUBLE_EQ(*ev_p10->checks[0].metrics[0].value, 0.99);
  EXPECT_EQ(ev_p10->checks[0].verdict, Verdict::kPass);
  // The row itself is still marked: the report shows which position was tolerated.
  EXPECT_EQ(ev_p10->checks[0].rows[7].verdict, Verdict::kFail);
}

TEST(GatePolicy, LowerIsBetterMetricsGateOnTheHighEnd) {
  CheckResult c = rows_with_cosines("logits", std::nullopt, {0.99, 0.99, 0.99});
  c.identity.kind = "logits";
  const double kls[] = {0.01, 0.30, 0.02};
  for (size_t i = 0; i < 3; ++i) c.rows[i].value(Metric::kKl) = kls[i];
  GatePolicy policy = builtin_gate_policy();
  Threshold t;
  t.bound = 0.1;
  t.reason = "test";
  policy.defaults.at(Metric::kKl) = t;
  FidelityRun run;
  run.checks.push_back(c);
  auto ev = evaluate_gate(run, policy);
  ASSERT_TRUE(ev.is_ok());
  const MetricVerdict* kl = nullptr;
  for (const auto& mv : ev->checks[0].metrics) {
    if (mv.metric == Metric::kKl) kl = &mv;
  }
  ASSERT_NE(kl, nullptr);
  EXPECT_EQ(kl->statistic, "max");
  EXPECT_DOUBLE_EQ(*kl->value, 0.30);
  EXPECT_EQ(kl->worst_position, 1);
  EXPECT_EQ(kl->verdict, Verdict::kFail);
}

TEST(GatePolicy, FirstFailureFollowsLayerOrder) {
  FidelityRun run;
  run.checks.push_back(rows_with_cosines("logits", std::nullopt, {0.5}));
  run.checks.push_back(rows_with_cosines("hidden.3", 3, {0.99, 0.90}));
  run.checks.push_back(rows_with_cosines("hidden.1", 1, {0.99, 0.99, 0.96}));
  auto ev = evaluate_gate(run, builtin_gate_policy());
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->summary.failed, 3);
  ASSERT_TRUE(ev->summary.first_failure_check.has_value());
  EXPECT_EQ(*ev->summary.first_failure_check, 2u);  // layer 1 comes first
  EXPECT_EQ(ev->summary.first_failure_position, 2);
  EXPECT_EQ(ev->summary.first_failure_metric, Metric::kCosine);
}

TEST(GatePolicy, PolicyJsonRoundTrips) {
  auto p = load_gate_policy(SG_SOURCE_DIR "/gates/fidelity.json");
  ASSERT_TRUE(p.is_ok());
  auto again = parse_gate_policy(gate_policy_json(*p), "roundtrip");
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->overrides.size(), p->overrides.size());
  EXPECT_EQ(again->topk, p->topk);
  for (size_t m = 0; m < kMetricCount; ++m) {
    EXPECT_EQ(again->defaults.metrics[m].has_value(), p->defaults.metrics[m].has_value());
    if (p->defaults.metrics[m]) {
      EXPECT_EQ(again->defaults.metrics[m]->bound, p->defaults.metrics[m]->bound);
    }
  }
}

TEST(GatePolicy, TopkMismatchIsAUsageError) {
  GatePolicy policy = builtin_gate_policy();
  policy.topk = 10;
  FidelityRun run;
  run.options.topk = 5;
  auto ev = evaluate_gate(run, policy);
  ASSERT_FALSE(ev.is_ok());
  EXPECT_EQ(ev.status().code(), ErrorCode::kUsage);
}

TEST(GatePolicy, GlobMatch) {
  EXPECT_TRUE(glob_match("hidden.*", "hidden.12"));
  EXPECT_TRUE(glob_match("L?_attn", "L3_attn"));
  EXPECT_FALSE(glob_match("hidden.*", "embed"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
}

}  // namespace
}  // namespace sg
