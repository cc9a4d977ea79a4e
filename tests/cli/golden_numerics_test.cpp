// Numerics options and provenance of golden-validator, end to end through the built binary:
//  - exec says whether a NaN/Inf reaches the outputs or later ops wash it out;
//  - --subnormals keep|flush|both (flushed results bit-equal numpy's, both views reported);
//  - run and probe --subnormals both gate under both storage views;
//  - out-of-range thresholds in a gate FILE are exit 2 naming the file and the key;
//  - record names every baseline shard with its fingerprint in the dump's manifest.
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "shardgate/npy.h"
#include "support/cli_run.h"
#include "support/golden_cli_fixture.h"
#include "support/json_schema_lite.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>

namespace sg {
namespace {

const std::string kNum = SG_TEST_DATA_DIR "/exec/numerics/";
using sg::testing::kSampleDir;
const std::string kNumericsGate = " --no-color --gate " SG_SOURCE_DIR "/gates/fidelity.json";

class NumericsCli : public testing::GoldenCliFixture {
 protected:
  NumericsCli() : GoldenCliFixture("sg_numerics_") {}
};

bool same_bits(const std::string& a, const std::string& b) {
  auto ta = read_npy(a);
  auto tb = read_npy(b);
  if (!ta.is_ok() || !tb.is_ok()) return false;
  return ta->dtype() == tb->dtype() && ta->shape() == tb->shape() &&
         std::memcmp(ta->raw(), tb->raw(), ta->nbytes()) == 0;
}

TEST_F(NumericsCli, ExecSaysWhichOutputsTheOverflowReaches) {
  const CliRun r =
      run_golden_validator("exec " + kNum + "numerics.mlpackage --input x=" + kNum + "x.npy");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first non-finite value: function 'main', op #"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'mul' output 'big'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("it reaches output 'raw' (16 of 32 values non-finite); outputs 'clipped', "
                          "'restored' are finite: later ops washed it out there"),
            std::string::npos)
      << r.output;
}

TEST_F(NumericsCli, ExecSaysWhenEveryOutputIsFiniteAgain) {
  const CliRun r = run_golden_validator("exec " + kNum +
                                        "overflow_recovers.mlpackage --input x=" + kNum + "x.npy");
  EXPECT_EQ(r.code, 1) << r.output;  // the device still overflowed on the way
  EXPECT_NE(r.output.find("every output is finite: later ops washed it out (no op after it produced "
                          "NaN/Inf)"),
            std::string::npos)
      << r.output;
}

TEST_F(NumericsCli, SubnormalsFlushMatchesNumpyAndBothReportsTheDifference) {
  const CliRun flush =
      run_golden_validator("exec " + kNum + "overflow_recovers.mlpackage --input x=" + kNum +
                           "x.npy --subnormals flush --out " + out("flush"));
  EXPECT_EQ(flush.code, 1) << flush.output;
  EXPECT_NE(flush.output.find("precision fp16-ftz"), std::string::npos) << flush.output;
  EXPECT_TRUE(same_bits(out("flush/restored.npy"), kNum + "flush_restored.npy"));
  // --flush-subnormals is the same.
  const CliRun alias =
      run_golden_validator("exec " + kNum + "overflow_recovers.mlpackage --input x=" + kNum +
                           "x.npy --flush-subnormals --out " + out("alias"));
  EXPECT_TRUE(same_bits(out("alias/restored.npy"), kNum + "flush_restored.npy")) << alias.output;

  const CliRun both =
      run_golden_validator("exec " + kNum + "overflow_recovers.mlpackage --input x=" + kNum +
                           "x.npy --subnormals both --out " + out("both"));
  EXPECT_EQ(both.code, 1) << both.output;
  EXPECT_NE(both.output.find("== subnormals keep: fp16 storage keeps subnormal results =="),
            std::string::npos)
      << both.output;
  EXPECT_NE(both.output.find("== subnormals flush: fp16 storage flushes subnormal results to zero =="),
            std::string::npos)
      << both.output;
  EXPECT_NE(both.output.find("output restored             16 of 32 values differ"), std::string::npos)
      << both.output;
  EXPECT_NE(both.output.find("output clipped              identical"), std::string::npos) << both.output;
  EXPECT_TRUE(same_bits(out("both/subnormals_keep/restored.npy"), kNum + "keep_restored.npy"));
  EXPECT_TRUE(same_bits(out("both/subnormals_flush/restored.npy"), kNum + "flush_restored.npy"));
}

TEST_F(NumericsCli, SubnormalOptionsThatCannotApplyAreUsageErrors) {
  const std::string x = " --input x=" + kNum + "x.npy";
  const CliRun fp32 = run_golden_validator("exec " + kNum + "numerics.mlpackage" + x +
                                           " --subnormals flush --precision fp32");
  EXPECT_EQ(fp32.code, 2) << fp32.output;
  EXPECT_NE(fp32.output.find("--subnormals flush needs fp16 storage"), std::string::npos) << fp32.output;
  const CliRun rec = run_golden_validator("record " + kSampleDir + "chains/chain_fp16.json --out " +
                                          out("d") + " --subnormals both");
  EXPECT_EQ(rec.code, 2) << rec.output;
  EXPECT_NE(rec.output.find("--subnormals both: record writes one golden dump"), std::string::npos) << rec.output;
  const CliRun views = run_golden_validator(
      "run " + kSampleDir + "chains/chain_lut4.json --both --subnormals both" + kNumericsGate);
  EXPECT_EQ(views.code, 2) << views.output;
  const CliRun both_flags = run_golden_validator("exec " + kNum + "numerics.mlpackage" + x +
                                                 " --subnormals keep --flush-subnormals");
  EXPECT_EQ(both_flags.code, 2) << both_flags.output;
}

TEST_F(NumericsCli, RunWithBothSubnormalViewsGatesEach) {
  const CliRun r =
      run_golden_validator("run " + kSampleDir + "chains/chain_lut4.json --subnormals both" +
                           kNumericsGate + " --json " + out("r.json") + " --html " + out("r.html"));
  EXPECT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = report("r.json");
  std::map<std::string, int> per_view;
  for (const auto& c : j["checks"]) {
    std::string view;
    for (const auto& l : c["labels"]) {
      if (l["key"] == "subnormals") view = l["value"].get<std::string>();
    }
    ++per_view[view];
  }
  ASSERT_EQ(per_view.size(), 2u) << j["checks"].dump();
  EXPECT_EQ(per_view["keep"], per_view["flush"]);
  EXPECT_GT(per_view["keep"], 4);
  bool noted = false;
  for (const auto& n : j["notes"]) noted = noted || n.get<std::string>().find("subnormals both") == 0;
  EXPECT_TRUE(noted) << j["notes"].dump();
  // The HTML draws each storage view as its own chart.
  auto html = read_file(out("r.html"));
  ASSERT_TRUE(html.is_ok());
  EXPECT_NE(html->find("data-view=\"subnormals=keep\""), std::string::npos);
  EXPECT_NE(html->find("data-view=\"subnormals=flush\""), std::string::npos);
}

TEST_F(NumericsCli, ProbeWithBothSubnormalViewsProbesEachOnTheSameInputs) {
  const CliRun r =
      run_golden_validator("probe " + kSampleDir +
                           "shards/L0_attn_lut4.mlpackage --baseline-replace _lut4=_fp16 "
                           "--seeds 2 --subnormals both" +
                           kNumericsGate + " --json " + out("p.json"));
  EXPECT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = report("p.json");
  ASSERT_EQ(j["checks"].size(), 2u) << j["checks"].dump();  // one output, two views
  std::set<std::string> views;
  for (const auto& c : j["checks"]) {
    ASSERT_EQ(c["labels"].size(), 1u);
    EXPECT_EQ(c["labels"][0]["key"], "subnormals");
    views.insert(c["labels"][0]["value"].get<std::string>());
    EXPECT_EQ(c["rows"].size(), j["checks"][0]["rows"].size());
  }
  EXPECT_EQ(views, (std::set<std::string>{"keep", "flush"}));
  // Each shard listed once, and each file once among the inputs.
  EXPECT_EQ(j["provenance"]["shards"].size(), 2u);
  EXPECT_EQ(j["provenance"]["inputs"].size(), 2u);  // candidate, baseline (the gate: provenance.gate)
}

TEST_F(NumericsCli, OutOfRangeThresholdInAGateFileIsExit2NamingFileAndKey) {
  const std::string gate = out("bad-gate.json");
  std::ofstream(gate) << R"({"schema": "shardgate/fidelity-gate@1", "defaults": {
    "min_cosine": {"value": 2, "reason": "typo for 0.97"}}})";
  const CliRun r = run_golden_validator("run " + kSampleDir + "chains/chain_lut4.json --gate " +
                                        gate + " --json " + out("e.json"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(gate + ": defaults.min_cosine.value: 2 is out of range (a cosine lies in [-1, 1])"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(report("e.json")["verdict"], "error");
}

// Provenance of a recorded dump: every baseline shard by its fingerprint (the same fingerprint
// `run` reports for that shard), the chain's sha256, the tool and the command line.
TEST_F(NumericsCli, RecordNamesEveryBaselineShardByFingerprint) {
  const std::string chain = kSampleDir + "chains/chain_fp16.json";
  const CliRun rec = run_golden_validator("record " + chain + " --out " + out("dump"));
  ASSERT_EQ(rec.code, 0) << rec.output;
  EXPECT_NE(rec.output.find("baseline shards, by fingerprint"), std::string::npos) << rec.output;
  auto text = read_file(out("dump/manifest.json"));
  ASSERT_TRUE(text.is_ok());
  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/golden-dump.schema.json");
  ASSERT_TRUE(schema.is_ok());
  EXPECT_EQ(testing::json_schema_violations(*schema, *text), std::vector<std::string>{});
  auto manifest = parse_golden_manifest(*text, "manifest.json");
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().to_string();
  ASSERT_TRUE(manifest->provenance.has_value());
  const GoldenProvenance& p = *manifest->provenance;
  EXPECT_EQ(p.tool.rfind("golden-validator ", 0), 0u);
  EXPECT_EQ(p.chain, chain);
  EXPECT_EQ(p.chain_sha256, *sha256_file(chain));
  EXPECT_EQ(p.precision, "fp16");
  ASSERT_GE(p.command_line.size(), 4u);
  EXPECT_EQ(p.command_line[1], "record");

  // The same shards, judged by run: the fingerprints agree, shard by shard.
  const CliRun run = run_golden_validator("run " + chain + kNumericsGate + " --goldens " +
                                          out("dump") + " --json " + out("r.json"));
  ASSERT_EQ(run.code, 0) << run.output;
  std::map<std::string, std::string> by_path;
  const nlohmann::json r = report("r.json");
  for (const auto& sh : r["provenance"]["shards"]) by_path[sh["path"].get<std::string>()] = sh["fingerprint"].get<std::string>();
  ASSERT_FALSE(p.shards.empty());
  std::set<std::string> fingerprints;
  for (const GoldenProvenance::Shard& s : p.shards) {
    EXPECT_EQ(s.fingerprint.size(), 64u) << s.id;
    ASSERT_TRUE(by_path.count(s.path)) << s.path;
    EXPECT_EQ(by_path[s.path], s.fingerprint) << s.id;
    fingerprints.insert(s.fingerprint);
  }
  // Different builds (different weights) never share a fingerprint: the sample's fp16 shards
  // are all distinct files with distinct weights.
  EXPECT_EQ(fingerprints.size(), by_path.size());
  // A manifest with a broken provenance is refused naming the place.
  auto bad = parse_golden_manifest(R"({"schema": "shardgate/golden-dump@1", "tensors": [],
      "provenance": {"shards": [{"id": "a", "path": "p"}]}})", "m.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("m.json: provenance.shards[0]: missing key 'fingerprint'"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace sg
