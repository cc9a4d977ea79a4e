// The residency policy file and the gate verdict.
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

namespace sg {
namespace {

OpPlacement op(const std::string& type, const std::string& out, Placement p, const std::string& rule,
               OpClass c = OpClass::kCompute) {
  OpPlacement r;
  r.type = type;
  r.outputs = {out};
  r.placement = r.predicted = p;
  r.rule_id = rule;
  r.op_class = c;
  return r;
}

TEST(ResidencyPolicy, CommittedGateFileLoads) {
  auto p = load_residency_policy(SG_SOURCE_DIR "/gates/residency.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->default_min_residency_pct, 100.0);
  for (const auto& o : p->overrides) EXPECT_FALSE(o.reason.empty());
  ResidencyThreshold t = p->threshold_for("/x/layer_07.mlmodelc");
  EXPECT_EQ(t.min_residency_pct, 100.0);
  EXPECT_NE(t.origin.find("default"), std::string::npos);
  EXPECT_NE(t.reason.find("every runtime compute op"), std::string::npos) << t.reason;
  EXPECT_EQ(p->threshold_for("corpus/unified_int8.mlmodelc").min_residency_pct, 83.0);
}

// The form shared with gates/fidelity.json: schema, defaults as {value, reason}, overrides
// with a match object.
TEST(ResidencyPolicy, UnifiedFormReadsDefaultsAndMatchOverrides) {
  auto p = parse_residency_policy(R"({"schema": "shardgate/residency-gate@1",
      "description": "test",
      "defaults": {"min_residency_pct": {"value": 99.5, "reason": "one op may fall back"}},
      "overrides": [{"match": {"shard": "lm_head_p*"}, "min_residency_pct": 90,
                     "reason": "vocab split"}]})",
                                  "g.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->threshold_for("lm_head_p1of3.mlpackage").min_residency_pct, 90.0);
  const ResidencyThreshold d = p->threshold_for("layer_00.mlpackage");
  EXPECT_EQ(d.min_residency_pct, 99.5);
  EXPECT_EQ(d.reason, "one op may fall back");
  EXPECT_EQ(d.origin, "g.json: default");
}

// When every layer's file is model.mlpackage, a glob on the file name alone cannot single out
// one layer: a glob with '/' matches as many trailing components of the path.
TEST(ResidencyPolicy, AGlobWithASlashMatchesTheEndOfThePath) {
  auto p = parse_residency_policy(R"({"schema": "shardgate/residency-gate@1",
      "defaults": {"min_residency_pct": {"value": 100}},
      "overrides": [{"match": {"shard": "7?/model.mlpackage"}, "min_residency_pct": 90,
                     "reason": "the last layers keep one op on the CPU"},
                    {"match": {"shard": "heads/*/model.mlpackage"}, "min_residency_pct": 80,
                     "reason": "the heads split the vocabulary"}]})",
                                  "g.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->threshold_for("/run/layers/79/model.mlpackage/").min_residency_pct, 90.0);
  EXPECT_EQ(p->threshold_for("layers/07/model.mlpackage").min_residency_pct, 100.0);
  EXPECT_EQ(p->threshold_for("model.mlpackage").min_residency_pct, 100.0);
  EXPECT_EQ(p->threshold_for("out/heads/2/model.mlpackage").min_residency_pct, 80.0);
  EXPECT_EQ(p->threshold_for("out/heads/2/x/model.mlpackage").min_residency_pct, 100.0);
  EXPECT_EQ(path_tail("./out//layers/07/model.mlpackage/", 2), "07/model.mlpackage");
  EXPECT_EQ(path_tail("a/b", 5), "a/b");
}

TEST(ResidencyPolicy, UnifiedFormRefusesTyposMissingReasonsAndOtherSchemas) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"schema": "shardgate/residency-gate@1",
           "defaults": {"min_residency_pct": {"value": 100}},
           "overrides": [{"match": {"shard": "a*"}, "min_residency_pct": 90}]})",
       "overrides[0].reason: every override needs a written reason"},
      {R"({"schema": "shardgate/residency-gate@1",
           "defaults": {"min_residency_pct": {"value": 100}, "min_residency": 90}})",
       "defaults: unknown key 'min_residency'"},
      {R"({"schema": "shardgate/residency-gate@1",
           "defaults": {"min_residency_pct": {"value": 100}},
           "overrides": [{"match": {"shard": "a*", "layer": 3}, "min_residency_pct": 90,
                          "reason": "r"}]})",
       "overrides[0].match: unknown key 'layer'"},
      {R"({"schema": "shardgate/fidelity-gate@1", "defaults": {}})",
       "schema: expected \"shardgate/residency-gate@1\""},
      {R"({"schema": "shardgate/residency-gate@1", "defaults": {"min_residency_pct": 100}})",
       "defaults.min_residency_pct: expected {\"value\": PCT"},
      {R"({"schema": "shardgate/residency-gate@1",
           "defaults": {"min_residency_pct": {"value": 100.5}}})",
       "defaults.min_residency_pct.value: 100.5 is not a percentage in [0, 100]"},
      {R"({"defaults": {"min_residency_pct": {"value": 100}}})",
       "schema: expected \"shardgate/residency-gate@1\""},
  };
  for (const auto& [text, why] : bad) {
    auto p = parse_residency_policy(text, "g.json");
    ASSERT_FALSE(p.is_ok()) << text;
    EXPECT_EQ(p.status().message().rfind("g.json: ", 0), 0u) << p.status().message();
    EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status().message();
  }
}

TEST(ResidencyPolicy, OverridesMatchTheShardNameFirstMatchWins) {
  auto p = parse_residency_policy(R"({"schema_version": 1, "gate": "residency",
      "default": {"min_residency_pct": 100},
      "overrides": [{"shard": "lm_head_p*", "min_residency_pct": 90, "reason": "vocab split"},
                    {"shard": "lm_head_p0*", "min_residency_pct": 10, "reason": "never reached"}]})",
                                  "g.json");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ResidencyThreshold t = p->threshold_for("out/lm_head_p0of3.mlmodelc/");
  EXPECT_EQ(t.min_residency_pct, 90.0);
  EXPECT_EQ(t.reason, "vocab split");
  EXPECT_NE(t.origin.find("g.json: override 'lm_head_p*'"), std::string::npos);
  EXPECT_EQ(p->threshold_for("layer_0.mlmodelc").min_residency_pct, 100.0);
}

TEST(ResidencyPolicy, RefusesOverridesWithoutReasonAndBadNumbers) {
  const char* bad[] = {
      R"({"schema_version": 1, "gate": "residency", "default": {"min_residency_pct": 100},
          "overrides": [{"shard": "a*", "min_residency_pct": 90}]})",
      R"({"schema_version": 1, "gate": "residency", "default": {"min_residency_pct": 101}})",
      R"({"schema_version": 2, "gate": "residency", "default": {"min_residency_pct": 100}})",
      R"({"schema_version": 1, "gate": "fidelity", "default": {"min_residency_pct": 100}})",
      R"({"schema_version": 1, "gate": "residency"})",
      R"([1, 2])",
      R"({"schema_version": 1,)",
  };
  for (const char* text : bad) {
    auto p = parse_residency_policy(text, "g.json");
    EXPECT_FALSE(p.is_ok()) << text;
    if (!p.is_ok()) {
      EXPECT_EQ(p.status().message().rfind("g.json: ", 0), 0u) << p.status().message();
    }
  }
}

TEST(ResidencyGate, FailureNamesRuleAndOps) {
  std::vector<OpPlacement> ops = {
      op("constexpr_blockwise_shift_scale", "w", Placement::kNoDevice, "R19a", OpClass::kCompileTime),
      op("conv", "q_proj", Placement::kCPU, "R22"), op("conv", "k_proj", Placement::kCPU, "R22"),
      op("softmax", "attn", Placement::kANE, "R5"),  op("add", "res", Placement::kANE, "R6"),
  };
  ResidencySummary s = summarize_residency(ops);
  GateVerdict v = evaluate_residency_gate(ops, s, {}, {}, ResidencyThreshold{100, "default", ""}, false);
  ASSERT_FALSE(v.passed);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_NE(v.failures[0].find("residency 50.00% of the body < 100%"), std::string::npos) << v.failures[0];
  EXPECT_NE(v.failures[0].find("R22 x2: conv 'q_proj', conv 'k_proj'"), std::string::npos)
      << v.failures[0];
  v = evaluate_residency_gate(ops, s, {}, {}, ResidencyThreshold{50, "override", "why"}, false);
  EXPECT_TRUE(v.passed);
}

TEST(ResidencyGate, StrictFailsOnRiskPlainDoesNot) {
  std::vector<OpPlacement> ops = {op("scaled_dot_product_attention", "o", Placement::kANERisk, "R3"),
                                  op("add", "r", Placement::kANE, "R6")};
  ResidencySummary s = summarize_residency(ops);
  EXPECT_TRUE(evaluate_residency_gate(ops, s, {}, {}, {}, false).passed);
  GateVerdict v = evaluate_residency_gate(ops, s, {}, {}, {}, true);
  ASSERT_FALSE(v.passed);
  EXPECT_NE(v.failures[0].find("R3 x1: scaled_dot_product_attention 'o'"), std::string::npos);
}

// A boundary cast a plan measured on the CPU is out of the residency, so the 100% gate passes
// (model verdict "at risk"); --strict used to pass it too, while failing the same cast when the
// rules merely predicted it at risk.
TEST(ResidencyGate, StrictFailsOnABoundaryCastOffTheANE) {
  std::vector<OpPlacement> ops = {op("cast", "x16", Placement::kCPU, "G2a"),
                                  op("conv", "y", Placement::kANE, "R1")};
  ops[0].boundary_cast = true;
  ResidencySummary s = summarize_residency(ops);
  EXPECT_TRUE(evaluate_residency_gate(ops, s, {}, {}, {}, false).passed);
  GateVerdict v = evaluate_residency_gate(ops, s, {}, {}, {}, true);
  ASSERT_FALSE(v.passed);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_NE(v.failures[0].find("strict: 1 boundary cast(s) off the ANE: G2a x1: cast 'x16'"),
            std::string::npos) << v.failures[0];
  ops[0].placement = Placement::kANE;  // on the ANE: nothing to fail
  EXPECT_TRUE(evaluate_residency_gate(ops, summarize_residency(ops), {}, {}, {}, true).passed);
}

TEST(ResidencyGate, NothingCheckedNeverPasses) {
  std::vector<OpPlacement> ops = {op("const", "c", Placement::kNoDevice, "R19", OpClass::kCompileTime)};
  GateVerdict v = evaluate_residency_gate(ops, summarize_residency(ops), {}, {},
                                          ResidencyThreshold{0, "t", ""}, false);
  EXPECT_FALSE(v.passed);
}

TEST(ResidencyGate, FailedContractCheckFailsTheGate) {
  std::vector<OpPlacement> ops = {op("add", "r", Placement::kANE, "R6")};
  ContractCheckResult c{"compression", "compression=1024", false, "1 of 1 ...", {"main: 'w2' ..."}};
  GateVerdict v = evaluate_residency_gate(ops, summarize_residency(ops), {}, {c}, {}, false);
  ASSERT_FALSE(v.passed);
  EXPECT_NE(v.failures[0].find("check compression=1024 failed"), std::string::npos);
  EXPECT_NE(v.failures[0].find("'w2'"), std::string::npos);
}

}  // namespace
}  // namespace sg
