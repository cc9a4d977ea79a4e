// Schemas that can fail: the test-side checker (support/json_schema_lite) enforces every keyword
// our schemas use and refuses the ones it does not implement; every schema in reports/schema/
// stays inside that set; the gate files validate against their schemas, and each broken gate
// file the schema refuses is refused by the gate reader too (schema and reader agree).
#include "shardgate/gate_policy.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"
#include "support/json_schema_lite.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace sg {
namespace {

using nlohmann::json;
using testing::json_schema_unsupported_keywords;
using testing::json_schema_violations;

std::string source_file(const std::string& rel) {
  auto text = read_file(std::string(SG_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(text.is_ok()) << text.status().to_string();
  return text.is_ok() ? *text : std::string();
}

bool valid(const std::string& schema, const json& doc) {
  return json_schema_violations(schema, doc.dump()).empty();
}

TEST(JsonSchemaLite, RefusesKeywordsItDoesNotImplement) {
  const std::string schema = R"({"type": "array", "uniqueItems": true})";
  const auto v = json_schema_violations(schema, "[1, 1]");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("'uniqueItems' is not implemented"), std::string::npos) << v[0];
  // Also deep inside a branch the document never reaches.
  EXPECT_FALSE(json_schema_violations(
                   R"({"properties": {"a": {"items": {"multipleOf": 2}}}})", "{}").empty());
  EXPECT_TRUE(json_schema_unsupported_keywords(R"({"title": "t", "description": "d",
      "$defs": {"x": {"type": "string"}}, "$ref": "#/$defs/x"})").empty());
}

TEST(JsonSchemaLite, EnforcesMaximumMaxItemsPrefixItemsAndMinProperties) {
  const std::string pct = R"({"type": "number", "minimum": 0, "maximum": 100})";
  EXPECT_TRUE(valid(pct, 100));
  EXPECT_FALSE(valid(pct, 100.5));
  EXPECT_FALSE(valid(pct, -1));

  const std::string pair = R"({"type": "array", "minItems": 2, "maxItems": 2})";
  EXPECT_TRUE(valid(pair, json::array({1, 2})));
  EXPECT_FALSE(valid(pair, json::array({1, 2, 3})));
  EXPECT_FALSE(valid(pair, json::array({1})));

  // prefixItems fixes the first elements; items applies to the rest only.
  const std::string path = R"({"type": "array", "prefixItems": [{"const": -1}],
                              "items": {"type": "integer", "minimum": 0}})";
  EXPECT_TRUE(valid(path, json::array({-1, 0, 3})));
  EXPECT_FALSE(valid(path, json::array({0, 3})));
  EXPECT_FALSE(valid(path, json::array({-1, -1})));

  const std::string nonempty = R"({"type": "object", "minProperties": 1})";
  EXPECT_TRUE(valid(nonempty, json{{"a", 1}}));
  EXPECT_FALSE(valid(nonempty, json::object()));
}

TEST(ReportSchemas, UseOnlyKeywordsTheCheckerImplements) {
  const std::filesystem::path dir = std::filesystem::path(SG_SOURCE_DIR) / "reports" / "schema";
  int schemas = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++schemas;
    EXPECT_EQ(json_schema_unsupported_keywords(source_file("reports/schema/" + e.path().filename().string())),
              std::vector<std::string>{})
        << e.path();
  }
  EXPECT_GE(schemas, 7);
}

TEST(ReportSchemas, ComputePlanDumpSampleValidatesAndABadBlockPathDoesNot) {
  const std::string schema = source_file("reports/schema/compute-plan-dump.schema.json");
  json plan = json::parse(source_file("tests/data/placement/silero-vad-fp16.plan.json"));
  EXPECT_EQ(json_schema_violations(schema, plan.dump()), std::vector<std::string>{});
  json& op = plan["functions"][0]["ops"][0];
  op["block_path"] = json::array({0});  // must start at the function's block (-1)
  EXPECT_FALSE(valid(schema, plan));
  op["block_path"] = json::array();
  for (int i = 0; i < 65; ++i) op["block_path"].push_back(-1);  // deeper than 64
  EXPECT_FALSE(valid(schema, plan));
  op["block_path"] = json::array({-1});
  op["cost"] = 1.5;  // a share of the plan's cost
  EXPECT_FALSE(valid(schema, plan));
  op["cost"] = 0.5;
  ASSERT_TRUE(valid(schema, plan));
  // if/then: schema 1 needs the compiled model.mil's hash, schema 2 the compiled build.
  auto names = [&](const std::string& missing) {
    const std::string want = "$.model: missing required '" + missing + "'";
    const std::vector<std::string> v = json_schema_violations(schema, plan.dump());
    return std::find(v.begin(), v.end(), want) != v.end();
  };
  plan["model"].erase("sha256_model_mil");
  EXPECT_TRUE(names("sha256_model_mil"));
  EXPECT_FALSE(names("compiled"));
  plan["schema"] = "ane-validator/placement-dump@2";
  EXPECT_TRUE(names("compiled"));
  EXPECT_FALSE(names("sha256_model_mil"));
}

// A mutation of a gate file: the schema must refuse it, and so must the reader.
struct Broken {
  const char* what;
  std::function<void(json&)> edit;
};

TEST(GateSchemas, FidelityGateFileValidatesAndBrokenOnesAreRefusedByBoth) {
  const std::string schema = source_file("reports/schema/fidelity-gate.schema.json");
  const json gate = json::parse(source_file("gates/fidelity.json"));
  EXPECT_EQ(json_schema_violations(schema, gate.dump()), std::vector<std::string>{});
  ASSERT_TRUE(parse_gate_policy(gate.dump(), "fidelity.json").is_ok());

  const std::vector<Broken> broken = {
      {"unknown top-level key", [](json& g) { g["min_cosine"] = 0.9; }},
      {"default without reason", [](json& g) { g["defaults"]["min_cosine"].erase("reason"); }},
      {"empty reason", [](json& g) { g["defaults"]["min_cosine"]["reason"] = ""; }},
      {"statistic mean", [](json& g) { g["defaults"]["statistic"]["value"] = "mean"; }},
      {"norm_ratio of three", [](json& g) { g["defaults"]["norm_ratio"]["value"] = {0.8, 1.0, 1.25}; }},
      {"override without reason", [](json& g) { g["overrides"][0].erase("reason"); }},
      {"empty match", [](json& g) { g["overrides"][0]["match"] = json::object(); }},
      {"unknown match key", [](json& g) { g["overrides"][0]["match"]["position"] = 3; }},
      {"topk 0", [](json& g) { g["topk"] = 0; }},
      {"wrong schema id", [](json& g) { g["schema"] = "shardgate/residency-gate@1"; }},
  };
  for (const Broken& b : broken) {
    json g = gate;
    b.edit(g);
    EXPECT_FALSE(valid(schema, g)) << "schema accepts: " << b.what;
    EXPECT_FALSE(parse_gate_policy(g.dump(), "fidelity.json").is_ok()) << "reader accepts: " << b.what;
  }
}

TEST(GateSchemas, ResidencyGateFileValidatesInBothFormsAndBrokenOnesAreRefusedByBoth) {
  const std::string schema = source_file("reports/schema/residency-gate.schema.json");
  const json gate = json::parse(source_file("gates/residency.json"));
  EXPECT_EQ(json_schema_violations(schema, gate.dump()), std::vector<std::string>{});
  ASSERT_TRUE(parse_residency_policy(gate.dump(), "residency.json").is_ok());
  const json v1 = json::parse(R"({"schema_version": 1, "gate": "residency",
      "default": {"min_residency_pct": 100},
      "overrides": [{"shard": "lm_head_*", "min_residency_pct": 95, "reason": "vocab gather"}]})");
  EXPECT_EQ(json_schema_violations(schema, v1.dump()), std::vector<std::string>{});
  ASSERT_TRUE(parse_residency_policy(v1.dump(), "residency.json").is_ok());

  const std::vector<Broken> broken = {
      {"pct above 100", [](json& g) { g["defaults"]["min_residency_pct"]["value"] = 101; }},
      {"negative override pct", [](json& g) { g["overrides"][0]["min_residency_pct"] = -5; }},
      {"override without reason", [](json& g) { g["overrides"][0].erase("reason"); }},
      {"empty reason", [](json& g) { g["overrides"][0]["reason"] = ""; }},
      {"match without shard", [](json& g) { g["overrides"][0]["match"] = json{{"kind", "x"}}; }},
      {"empty shard glob", [](json& g) { g["overrides"][0]["match"]["shard"] = ""; }},
      {"unknown key", [](json& g) { g["defaults"]["max_fallbacks"] = json{{"value", 1}}; }},
      {"no defaults", [](json& g) { g.erase("defaults"); }},
  };
  for (const Broken& b : broken) {
    json g = gate;
    b.edit(g);
    EXPECT_FALSE(valid(schema, g)) << "schema accepts: " << b.what;
    EXPECT_FALSE(parse_residency_policy(g.dump(), "residency.json").is_ok())
        << "reader accepts: " << b.what;
  }
}

}  // namespace
}  // namespace sg
