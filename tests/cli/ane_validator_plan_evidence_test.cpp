// ane-validator with a compute-plan dump: the dump is the evidence of a plan-based verdict, so
// every report names it with its sha256 and says what it was matched against, and a share
// computed over part of the body says which part. Runs the built binary (build the
// ane-validator target first).
#include "shardgate/io.h"
#include "support/cli_run.h"
#include "support/file_bytes.h"
#include "support/temp_dir_test.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <string>

namespace {

namespace fs = std::filesystem;
using sg::CliRun;

using sg::testing::kAneValidator;
using sg::testing::kSileroDir;
const std::string kFp16Stem = kSileroDir + "silero-vad-unified-v6.0.0";  // + .mlmodelc / .mlpackage
const std::string kPlanV1 = std::string(SG_TEST_DATA_DIR) + "/placement/silero-vad-fp16.plan.json";

using sg::testing::slurp;
using sg::testing::spit;

std::string sha256_of(const std::string& bytes) {
  return sg::sha256_hex(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

class AneValidatorPlanEvidence : public sg::testing::TempDirTest {
 protected:
  AneValidatorPlanEvidence() : TempDirTest("sg_ane_plan_evidence_") {}
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAneValidator))
        << kAneValidator << " is missing: build the ane-validator target";
    TempDirTest::SetUp();
  }
  // Runs from the test's directory, so relative report and dump paths stay there.
  CliRun run(const std::string& args) const {
    return sg::run_command("cd '" + dir_.string() + "' && '" + kAneValidator + "' " + args);
  }
};

// The audit's case: the dump's sha256 was null in provenance and the Markdown and JUnit reports
// did not name the dump at all. A dump edited after the run (one byte more) gets another hash,
// so the hash is the file's, not a constant.
TEST_F(AneValidatorPlanEvidence, EveryReportNamesTheDumpWithItsSha256) {
  for (const std::string& extra : {std::string(), std::string("\n")}) {
    const std::string text = slurp(kPlanV1) + extra;
    spit(dir_ / "plan_allane.json", text);
    const std::string sha = sha256_of(text);
    CliRun r = run(kFp16Stem +
                   ".mlmodelc --plan plan_allane.json --min-residency 90 --json r.json "
                   "--markdown r.md --junit r.xml");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("plan plan_allane.json (sha256 " + sha.substr(0, 12) + ")"),
              std::string::npos) << r.output;
    const auto j = nlohmann::json::parse(slurp(dir_ / "r.json"));
    ASSERT_EQ(j["provenance"]["inputs"].size(), 1u) << j["provenance"].dump();
    EXPECT_EQ(j["provenance"]["inputs"][0],
              (nlohmann::json{{"role", "plan"}, {"path", "plan_allane.json"}, {"sha256", sha}}));
    EXPECT_EQ(j["shards"][0]["plan_sha256"], sha);
    const std::string md = slurp(dir_ / "r.md");
    EXPECT_NE(md.find("`plan_allane.json` | " + sha.substr(0, 12) + " |"), std::string::npos) << md;  // a code span shows its text as is
    const std::string xml = slurp(dir_ / "r.xml");
    EXPECT_NE(xml.find("<property name=\"plan\" value=\"plan_allane.json\"/>"), std::string::npos)
        << xml;
    EXPECT_NE(xml.find("<property name=\"plan.sha256\" value=\"" + sha + "\"/>"), std::string::npos)
        << xml;
  }
  // --plan-dir pairs the dump itself (another code path): its hash is recorded all the same.
  fs::create_directories(dir_ / "plans");
  fs::copy_file(kPlanV1, dir_ / "plans" / "silero.json");
  CliRun r = run(kFp16Stem + ".mlmodelc --plan-dir plans --min-residency 90 --json d.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(dir_ / "d.json"));
  EXPECT_EQ(j["provenance"]["inputs"][0]["sha256"], sha256_of(slurp(kPlanV1)))
      << j["provenance"].dump();
}

// A placement-dump@1 records only the compiled model.mil's sha256: a copy of the shard with a
// weight byte flipped (another fingerprint) is still matched, and the reports say that the
// weights were not compared. A placement-dump@2 matches by fingerprint and says so.
TEST_F(AneValidatorPlanEvidence, ReportsSayWhatTheDumpWasMatchedAgainst) {
  const fs::path copy = dir_ / "silero-vad-unified-v6.0.0.mlmodelc";
  fs::copy(kFp16Stem + ".mlmodelc", copy, fs::copy_options::recursive);
  std::string weights = slurp(copy / "weights" / "weight.bin");
  ASSERT_FALSE(weights.empty());
  weights.back() = static_cast<char>(weights.back() ^ 0x01);
  spit(copy / "weights" / "weight.bin", weights);
  CliRun r = run("'" + copy.string() + "' '" + kFp16Stem + ".mlmodelc' --plan '" + kPlanV1 +
                 "' --min-residency 90 --json r.json --gate '" SG_SOURCE_DIR
                 "/gates/residency.json'");  // one policy for the copy and the original
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(dir_ / "r.json"));
  ASSERT_EQ(j["shards"].size(), 2u);
  EXPECT_NE(j["shards"][0]["fingerprint"], j["shards"][1]["fingerprint"]) << "the copy differs";
  for (const auto& s : j["shards"]) {
    EXPECT_EQ(s["placement_source"], "plan") << s["path"];
    EXPECT_EQ(s["plan_matched_by"],
              "sha256 of the compiled model.mil only (placement-dump@1): weights not compared");
  }
  EXPECT_NE(r.output.find("matched by sha256 of the compiled model.mil only (placement-dump@1): "
                          "weights not compared"), std::string::npos) << r.output;

  r = run("'" + kSileroDir +
          "unified_int8.mlmodelc' --plan '" SG_TEST_DATA_DIR
          "/placement/mac/unified_int8.mlpackage.json' --min-residency 0 --markdown r.md");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("matched by fingerprint (program and every weight file)"),
            std::string::npos) << r.output;
  EXPECT_NE(slurp(dir_ / "r.md").find("| fingerprint (program and every weight file) |"),
            std::string::npos);
}

// The same @1 dump given the package of that build: the package's program is a protobuf, the
// dump names a compiled model.mil, so nothing here can tie them; the message says exactly that
// and what to do, instead of calling it "another build".
TEST_F(AneValidatorPlanEvidence, SchemaOneDumpForAPackageSaysWhyItCannotTell) {
  CliRun r = run("'" + kFp16Stem + ".mlpackage' --plan '" + kPlanV1 + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("format error: " + kPlanV1 + ": a placement-dump@1 names its build only "
                          "by the sha256 of the compiled model.mil"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("whether they are the same build cannot be told here"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("captured for another build"), std::string::npos) << r.output;
}

// The audit's case: 4 body ops on the CPU with "cost": null read "cost-weighted 100.0%". The
// share now names the ops it covers, in the terminal and in Markdown; a dump costing every op
// says so without the "without a cost" part.
TEST_F(AneValidatorPlanEvidence, CostWeightedShareSaysHowManyOpsItCovers) {
  auto dump = nlohmann::json::parse(slurp(kPlanV1));
  int nulled = 0;
  for (auto& f : dump["functions"]) {
    for (auto& op : f["ops"]) {
      if (op["preferred"] == "cpu") {
        op["cost"] = nullptr;
        ++nulled;
      }
    }
  }
  ASSERT_EQ(nulled, 4);
  spit(dir_ / "partcost.json", dump.dump(1));
  const std::string expected = "cost-weighted 100.0% of the 38 costed ops (4 of 42 without a cost)";
  CliRun r = run(kFp16Stem + ".mlmodelc --plan partcost.json --markdown r.md");
  // Gated by count, not cost: 90.5 % of the body is above the corpus' 83 % (gates/).
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  EXPECT_NE(slurp(dir_ / "r.md").find("| " + expected + " |"), std::string::npos);

  r = run(kFp16Stem + ".mlmodelc --plan '" + kPlanV1 + "' --markdown r.md");
  EXPECT_NE(r.output.find("cost-weighted 90.5% of the 42 costed ops (min"), std::string::npos)
      << r.output;
  EXPECT_NE(slurp(dir_ / "r.md").find("| cost-weighted 90.5% of the 42 costed ops |"),
            std::string::npos);
}

// The dump records where it was taken (compute units, host, producer note) and the reports
// dropped all of it: a dump written by tests/mac's fake runtime, whose note says no Mac ran it,
// gave a PASS indistinguishable from a measured one. Every report now says where it was taken.
TEST_F(AneValidatorPlanEvidence, ReportsSayWhereTheDumpWasTaken) {
  const std::string fake = std::string(SG_TEST_DATA_DIR) + "/placement/mac/L0_attn_lut4.mlpackage.json";
  CliRun r = run("'" SG_SOURCE_DIR "/goldens/sample/shards/L0_attn_lut4.mlpackage' --plan '" +
                 fake + "' --json r.json --markdown r.md --junit r.xml");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string taken =
      "CPU_AND_NE on chip=none: tests/mac/fake_runtime.py, os=Linux (fake), target=fake; "
      "producer note: FAKE runtime (tests/mac/fake_runtime.py): no Mac ran this";
  EXPECT_NE(r.output.find("matched by fingerprint (program and every weight file), taken with " +
                          taken), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(slurp(dir_ / "r.json"));
  EXPECT_EQ(j["shards"][0]["plan_taken_on"].get<std::string>().rfind(taken, 0), 0u)
      << j["shards"][0]["plan_taken_on"];
  EXPECT_NE(slurp(dir_ / "r.md").find("| CPU\\_AND\\_NE on chip=none: tests/mac/fake\\_runtime.py, "
                                      "os=Linux (fake), target=fake; producer note: FAKE runtime"),
            std::string::npos);  // Markdown-escaped
  EXPECT_NE(slurp(dir_ / "r.xml").find("<property name=\"plan.taken_on\" value=\"" + taken),
            std::string::npos);
}

}  // namespace
