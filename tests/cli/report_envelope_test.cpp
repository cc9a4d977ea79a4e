// One report envelope for both tools: every JSON report (ane-validator's gate and merge;
// golden-validator run, regate, merge, weights, culprits, advise, diff) opens with
// the same fields, validates against reports/schema/report-envelope.schema.json and its own
// schema, is read by parse_report_envelope, and carries what it judged (gate, inputs, shards
// with fingerprints) and what the process exited with.
#include "shardgate/io.h"
#include "shardgate/report_envelope.h"

#include "support/cli_run.h"
#include "support/json_schema_lite.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace sg {
namespace {

class ReportEnvelopeCli : public testing::TempDirTest {
 protected:
  ReportEnvelopeCli() : TempDirTest("sg_envelope_") {}
  static CliRun tool(const std::string& name, const std::string& args) {
    return run_command(std::string(SG_BINARY_DIR "/validators/") + name + " " + args);
  }
  static std::string source(const std::string& rel) {
    auto t = read_file(std::string(SG_SOURCE_DIR) + "/" + rel);
    EXPECT_TRUE(t.is_ok()) << rel;
    return t.is_ok() ? *t : std::string();
  }

  // The report at `name`: valid against the envelope and against `schema`; its envelope read
  // back equals the JSON's fields, and the exit code recorded is the process's.
  ReportEnvelope check(const std::string& name, const std::string& schema, int exit_code) {
    const std::string text = source_abs(out(name));
    EXPECT_EQ(testing::json_schema_violations(source("reports/schema/report-envelope.schema.json"), text),
              std::vector<std::string>{}) << name;
    EXPECT_EQ(testing::json_schema_violations(source("reports/schema/" + schema + ".schema.json"), text),
              std::vector<std::string>{}) << name;
    auto e = parse_report_envelope(text, name);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    if (!e.is_ok()) return {};
    EXPECT_EQ(e->kind, schema) << name;
    EXPECT_EQ(e->exit_code, exit_code) << name;
    EXPECT_FALSE(e->command_line.empty()) << name;
    // The envelope's fields come first, in one order, in every report.
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end() && keys.size() < 8; ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"run_id", "schema_version", "tool", "command",
                                              "command_line", "verdict", "exit_code", "provenance"}))
        << name;
    return *e;
  }
  static std::string source_abs(const std::string& path) {
    auto t = read_file(path);
    EXPECT_TRUE(t.is_ok()) << path;
    return t.is_ok() ? *t : std::string();
  }
};

const std::string kSampleRel = "goldens/sample/";

// The verdict words the readers accept are the schema's: a word one side lacks is a report
// the other refuses (a no_evidence golden report could not be re-gated before this test).
TEST(ReportEnvelope, VerdictWordsAreTheSchemasEnum) {
  auto text = read_file(std::string(SG_SOURCE_DIR) + "/reports/schema/report-envelope.schema.json");
  ASSERT_TRUE(text.is_ok());
  const nlohmann::json schema = nlohmann::json::parse(*text);
  std::set<std::string> in_schema;
  for (const auto& v : schema["properties"]["verdict"]["enum"]) in_schema.insert(v.get<std::string>());
  std::set<std::string> in_code(std::begin(kReportVerdicts), std::end(kReportVerdicts));
  EXPECT_EQ(in_code, in_schema);
}

TEST_F(ReportEnvelopeCli, AneValidatorAndItsMergeShareTheEnvelope) {
  const std::string shards =
      kSampleRel + "shards/L0_attn_lut4.mlpackage " + kSampleRel + "shards/L1_attn_lut4.mlpackage";
  ASSERT_EQ(tool("ane-validator", shards + " -q --json " + out("a.json")).code, 0);
  ReportEnvelope e = check("a.json", "ane-report", 0);
  EXPECT_EQ(e.tool, "ane-validator");
  EXPECT_EQ(e.command, "check");
  EXPECT_EQ(e.verdict, "pass");
  ASSERT_TRUE(e.provenance.gate.has_value());
  EXPECT_EQ(e.provenance.gate->path, std::string(SG_SOURCE_DIR) + "/gates/residency.json");
  EXPECT_EQ(e.provenance.gate->sha256.size(), 64u);
  ASSERT_EQ(e.provenance.shards.size(), 2u);
  EXPECT_EQ(e.provenance.shards[0].fingerprint.size(), 64u);

  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(tool("ane-validator", shards + " -q --shard-count 2 --shard-index " + std::to_string(i) +
                                        " --json " + out("s" + std::to_string(i) + ".json")).code, 0);
  }
  ASSERT_EQ(tool("golden-validator", "merge " + out("s0.json") + " " + out("s1.json") + " -q --json " +
                                         out("m.json")).code, 0);
  e = check("m.json", "ane-report", 0);
  EXPECT_EQ(e.command_line[1], "merge");
  EXPECT_EQ(e.provenance.shards.size(), 2u);

  // A gate failure: verdict and exit code at the top, as in golden-validator's reports.
  ASSERT_EQ(tool("ane-validator",
                 kSampleRel + "shards/L0_moe_p0_lut4.mlpackage -q --json " + out("f.json"))
                .code,
            1);
  e = check("f.json", "ane-report", 1);
  EXPECT_EQ(e.verdict, "fail");
}

TEST_F(ReportEnvelopeCli, EveryGoldenValidatorReportSharesTheEnvelope) {
  const std::string int8 = kSampleRel + "chains/chain_int8.json";
  ASSERT_EQ(tool("golden-validator", "run " + int8 + " -q --json " + out("run.json")).code, 1);
  ReportEnvelope e = check("run.json", "golden-report", 1);
  EXPECT_EQ(e.tool, "golden-validator");
  EXPECT_EQ(e.command, "run");
  EXPECT_EQ(e.verdict, "fail");
  ASSERT_TRUE(e.provenance.gate.has_value());
  EXPECT_EQ(e.provenance.gate->sha256.size(), 64u);
  EXPECT_EQ(e.provenance.shards.size(), 16u);
  ASSERT_EQ(e.provenance.inputs.size(), 2u);
  EXPECT_EQ(e.provenance.inputs[0].role, "chain");
  EXPECT_EQ(e.provenance.inputs[0].path, int8);

  // regate under a looser gate: passes; the saved report is an input.
  ASSERT_EQ(tool("golden-validator", "regate " + out("run.json") + " --min-cosine 0.9 -q --json " +
                                         out("regate.json")).code, 0);
  e = check("regate.json", "golden-report", 0);
  EXPECT_EQ(e.verdict, "pass");
  EXPECT_EQ(e.provenance.inputs.back().role, "report");

  ASSERT_EQ(tool("golden-validator", "run " + int8 + " --teacher-forced --shard-count 9 --shard-index 8 -q --json " +
                                         out("empty.json")).code, 0);
  e = check("empty.json", "golden-report", 0);
  EXPECT_EQ(e.verdict, "empty-slice");

  const std::string shard = kSampleRel + "shards/L0_moe_p0_int8.mlpackage";
  ASSERT_EQ(tool("golden-validator", "weights " + shard + " -q --json " + out("w.json")).code, 1);
  e = check("w.json", "weight-diagnostics", 1);
  EXPECT_EQ(e.verdict, "fail");
  ASSERT_EQ(e.provenance.shards.size(), 1u);
  EXPECT_EQ(e.provenance.shards[0].path, shard);

  ASSERT_EQ(tool("golden-validator", "culprits " + shard + " --baseline-replace _int8=_fp16 --inputs-from " +
                                         int8 + " -q --json " + out("c.json")).code, 0);
  e = check("c.json", "culprits", 0);
  EXPECT_EQ(e.verdict, "diagnosis");
  ASSERT_EQ(e.provenance.shards.size(), 2u);
  EXPECT_EQ(e.provenance.shards[1].id, "baseline");

  ASSERT_EQ(tool("golden-validator", "advise " + int8 + " --baseline-replace _int8=_fp16 -q --json " +
                                         out("advice.json")).code, 0);
  e = check("advice.json", "advice", 0);
  EXPECT_EQ(e.verdict, "pass");
  EXPECT_EQ(e.provenance.shards.size(), 16u);
  EXPECT_EQ(e.provenance.inputs[0].path, int8);

  ASSERT_EQ(tool("golden-validator",
                 "run " + kSampleRel + "chains/chain_lut4.json -q --json " + out("lut4.json"))
                .code,
            0);
  ASSERT_EQ(tool("golden-validator", "diff " + out("lut4.json") + " " + out("run.json") + " --gate " SG_SOURCE_DIR
                                         "/gates/regression.json -q --json " + out("d.json")).code, 1);
  e = check("d.json", "report-diff", 1);
  EXPECT_EQ(e.verdict, "fail");
  ASSERT_EQ(e.provenance.inputs.size(), 2u);
  EXPECT_EQ(e.provenance.inputs[0].role, "old");
  EXPECT_EQ(e.provenance.inputs[1].path, out("run.json"));
  ASSERT_TRUE(e.provenance.gate.has_value());
}

// JUnit: both tools name suites "<tool>.<command>[.<subject>]", and two chains of one pipeline
// (or the shards of two jobs) never share a test id (classname + name).
TEST_F(ReportEnvelopeCli, JunitIdsAreUniquePerChainAndShardAndSuitesAreNamedAlike) {
  auto ids = [&](const std::string& file) {
    const std::string xml = source_abs(out(file));
    std::set<std::string> found;
    const std::string open = "<testcase classname=\"";
    for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at + 1)) {
      const size_t cls_end = xml.find('"', at + open.size());
      const size_t name_at = xml.find("name=\"", cls_end) + 6;
      found.insert(xml.substr(at + open.size(), cls_end - at - open.size()) + "/" +
                   xml.substr(name_at, xml.find('"', name_at) - name_at));
    }
    return found;
  };
  for (const char* v : {"lut4", "int8"}) {
    tool("golden-validator", "run " + kSampleRel + "chains/chain_" + v + ".json -q --junit " +
                                 out(std::string(v) + ".xml"));
  }
  const auto lut4 = ids("lut4.xml"), int8 = ids("int8.xml");
  ASSERT_EQ(lut4.size(), 6u);
  EXPECT_EQ(int8.size(), 6u);
  for (const std::string& id : lut4) EXPECT_EQ(int8.count(id), 0u) << id;
  EXPECT_EQ(lut4.count("golden-validator.run.chain_lut4/logits"), 1u) << *lut4.begin();
  EXPECT_NE(source_abs(out("lut4.xml")).find("<testsuite name=\"golden-validator.run.chain_lut4\""),
            std::string::npos);

  ASSERT_EQ(
      tool("ane-validator", kSampleRel + "shards/L0_attn_lut4.mlpackage -q --junit " + out("a.xml"))
          .code,
      0);
  EXPECT_EQ(ids("a.xml"), (std::set<std::string>{"ane-validator.check/" + kSampleRel +
                                                 "shards/L0_attn_lut4.mlpackage"}));
  EXPECT_NE(source_abs(out("a.xml")).find("<testsuite name=\"ane-validator.check\""), std::string::npos);
}

TEST_F(ReportEnvelopeCli, ReportsFromBeforeTheEnvelopeAreRefusedSayingSo) {
  // The ane-validator report of shardgate before the envelope: schema_version 2, tool a string.
  auto e = parse_report_envelope(R"({"schema_version": 2, "tool": "ane-validator"})", "old.json");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("old.json: schema_version: 2 is the ane-validator report before "
                                      "the shared envelope"), std::string::npos) << e.status().message();
  e = parse_report_envelope(R"({"schema_version": "shardgate/golden-report@1", "tool": {"name":
      "golden-validator", "version": "0.1.0"}, "command": "run", "command_line": []})", "g1.json");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("g1.json: top level: missing key 'provenance'"), std::string::npos)
      << e.status().message();
  // merge and diff name the file instead of misreading it.
  const std::string old = out("old.json");
  ASSERT_TRUE(write_file_atomic(old, R"({"schema_version": 2, "tool": "ane-validator", "shards": []})").is_ok());
  CliRun r = tool("golden-validator", "merge " + old);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("re-run ane-validator"), std::string::npos) << r.output;
  r = tool("golden-validator", "diff " + old + " " + old + " --gate " SG_SOURCE_DIR "/gates/regression.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(old + ": schema_version"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace sg
