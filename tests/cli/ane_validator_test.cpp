// ane-validator end to end: runs the built binary (build the ane-validator target first) from
// the source directory, so gates/residency.json is the default policy, and checks exit codes,
// messages and reports.
#include "shardgate/io.h"

#include "support/cli_run.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <unistd.h>

namespace {

using sg::CliRun;
using sg::run_command;

using sg::testing::kAneValidator;
const std::string kCorpusRel = "tests/data/corpus/silero-vad/";
const std::string kFp16Rel = kCorpusRel + "silero-vad-unified-v6.0.0.mlmodelc";
const std::string kLlm = "tests/data/fixtures/llm/";

CliRun run_ane(const std::string& args) {
  return run_command("cd '" SG_SOURCE_DIR "' && '" + kAneValidator + "' " + args);
}

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "sg_ane_validator_test";
  std::filesystem::create_directories(dir);
  return (dir / (std::to_string(::getpid()) + "_" + name)).string();
}

nlohmann::json read_json(const std::string& path) {
  auto text = sg::read_file(path);
  EXPECT_TRUE(text.is_ok()) << path;
  return text.is_ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

class AneValidator : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kAneValidator))
        << kAneValidator << " is missing: build the ane-validator target";
  }
};

// Every error starts with its category (README, Exit codes), as golden-validator's usage
// errors do: these two were bare messages.
TEST_F(AneValidator, NothingToCheckIsAUsageError) {
  CliRun r = run_ane("");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("ane-validator: usage error: no shard given"), std::string::npos)
      << r.output;
  r = run_ane("--check bogus " + kFp16Rel);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("ane-validator: usage error: --check bogus: unknown check"),
            std::string::npos) << r.output;
  r = run_ane("--frobnicate " + kFp16Rel);
  EXPECT_EQ(r.code, 2) << r.output;
  r = run_ane("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("--min-residency"), std::string::npos);
}

TEST_F(AneValidator, EveryCorpusModelExitsZeroOrOneWithFullOpCount) {
  for (const char* name : {"silero-vad-unified-v6.0.0", "unified_int8", "unified_palette_4bit"}) {
    for (const char* ext : {".mlmodelc", ".mlpackage"}) {
      // One report per run, none left from an earlier run or test process: each count below
      // is read from the report this run wrote.
      const std::string json = temp_path(std::string("corpus_") + name + ext + ".json");
      std::filesystem::remove(json);
      CliRun r = run_ane(kCorpusRel + name + ext + " --min-residency 100 --json " + json);
      EXPECT_EQ(r.code, 1) << name << ext << "\n" << r.output;  // fp32 LSTM path: below 100%
      ASSERT_TRUE(std::filesystem::exists(json)) << name << ext << ": no report\n" << r.output;
      auto j = read_json(json);
      EXPECT_EQ(j["shards"][0]["summary"]["total_ops"], 137) << name << ext;
      EXPECT_EQ(j["shards"][0]["summary"]["compute_ops"], 48) << name << ext;
    }
  }
}

TEST_F(AneValidator, DefaultGateFileOverridesApply) {
  // gates/residency.json gates the Silero corpus at 83% of the body with a written reason.
  CliRun r = run_ane(kFp16Rel + " -v");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("PASS"), std::string::npos);
  EXPECT_NE(r.output.find("residency 83.3% of 42 body ops (min 83%)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LSTM"), std::string::npos) << "the override reason is printed with -v";
  r = run_ane(kFp16Rel + " --min-residency 100");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("G2 x7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lstm 'lstm_out_batch_first_0'"), std::string::npos) << r.output;
}

// Every report says which exact build it judged (issue 8 item 3): the shard fingerprint and the
// gate file's sha256. Oracle: the fingerprints the Mac script's Python code recorded for the same
// corpus builds (tests/data/placement/mac/unified_int8.mlpackage.json, written through the seam).
TEST_F(AneValidator, ReportsCarryTheShardFingerprintAndTheGateFileSha256) {
  const std::string package_fp = "14675d3b2d13b92ca3884168d4011ad8b3ce1af6e76a279cfe26425c1b2a19e4";
  const std::string compiled_fp = "2b29cc6f443a012dc6c9c5dfac0937fcd89e1c9ba1f3e48bf6e6d638d9b69c51";
  std::string json = temp_path("fp.json");
  std::string junit = temp_path("fp.xml");
  std::string md = temp_path("fp.md");
  CliRun r = run_ane(kCorpusRel + "unified_int8.mlpackage " + kCorpusRel +
                     "unified_int8.mlmodelc -v --json " + json + " --junit " + junit +
                     " --markdown " + md);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fingerprint " + package_fp), std::string::npos) << r.output;
  auto j = read_json(json);
  EXPECT_EQ(j["schema_version"], "shardgate/ane-report@3");
  EXPECT_EQ(j["fingerprinted"], true);
  auto gate = sg::read_file(SG_SOURCE_DIR "/gates/residency.json");
  ASSERT_TRUE(gate.is_ok());
  const std::string gate_sha = sg::sha256_hex(std::as_bytes(std::span<const char>(gate->data(), gate->size())));
  EXPECT_EQ(j["provenance"]["gate"]["sha256"], gate_sha);
  ASSERT_EQ(j["shards"].size(), 2u);
  for (const auto& s : j["shards"]) {
    EXPECT_EQ(s["fingerprint"], s["form"] == "mlpackage" ? package_fp : compiled_fp) << s["name"];
  }
  auto xml = sg::read_file(junit);
  ASSERT_TRUE(xml.is_ok());
  EXPECT_NE(xml->find("fingerprint " + package_fp), std::string::npos) << *xml;
  EXPECT_NE(xml->find("fingerprint " + compiled_fp), std::string::npos) << *xml;
  EXPECT_NE(xml->find(gate_sha), std::string::npos) << *xml;
  auto markdown = sg::read_file(md);
  ASSERT_TRUE(markdown.is_ok());
  EXPECT_NE(markdown->find(".mlpackage | " + package_fp + " |"), std::string::npos) << *markdown;
  EXPECT_NE(markdown->find("(sha256 " + gate_sha + ")"), std::string::npos) << *markdown;

  // Opting out: the reports say the fingerprint was not computed instead of naming a build.
  r = run_ane(kCorpusRel + "unified_int8.mlpackage --no-fingerprint -v --json " + json +
              " --markdown " + md);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("      fingerprint not computed (--no-fingerprint)\n"), std::string::npos)
      << r.output;
  j = read_json(json);
  EXPECT_EQ(j["fingerprinted"], false);
  EXPECT_TRUE(j["shards"][0]["fingerprint"].is_null());
  markdown = sg::read_file(md);
  ASSERT_TRUE(markdown.is_ok());
  EXPECT_NE(markdown->find("not computed (--no-fingerprint)"), std::string::npos) << *markdown;
}

TEST_F(AneValidator, StrictFailsOnAtRiskOps) {
  CliRun r = run_ane(kFp16Rel + " --min-residency 0");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 shard(s): 1 passed, 0 failed"), std::string::npos) << r.output;
  // A pass whose model verdict is "at risk" says so on the summary line too, not only on the
  // shard's line (the silero model above passes its lowered threshold with a "fail" model
  // verdict: 7 ops on the CPU by design).
  const CliRun risk = run_ane("goldens/sample/shards/L0_attn_lut4.mlpackage");
  EXPECT_EQ(risk.code, 0) << risk.output;
  EXPECT_NE(risk.output.find("model at risk"), std::string::npos) << risk.output;
  EXPECT_NE(risk.output.find("1 shard(s): 1 passed (1 of them at risk: --strict fails them), 0 failed"),
            std::string::npos) << risk.output;
  r = run_ane(kFp16Rel + " --min-residency 0 --strict");
  EXPECT_EQ(r.code, 1) << r.output;
  // The six boundary casts (G2a) and the ops the small-graph overlay (G5) raises.
  EXPECT_NE(r.output.find("strict: 41 compute op(s) at risk: G2a x6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("R1+G5 x6: conv"), std::string::npos) << r.output;
}

TEST_F(AneValidator, ShardThatFailsToOpenIsExitTwoAndReported) {
  std::string json = temp_path("broken.json");
  std::string junit = temp_path("broken.xml");
  CliRun r = run_ane(kFp16Rel + " " + kCorpusRel + "missing.mlmodelc --json " + json + " --junit " +
                     junit);
  EXPECT_EQ(r.code, 2) << r.output;
  // The shard's error line starts with its category too.
  EXPECT_NE(r.output.find("      i/o error: " + kCorpusRel + "missing.mlmodelc"), std::string::npos)
      << r.output;
  auto j = read_json(json);
  EXPECT_EQ(j["schema_version"], "shardgate/ane-report@3");
  EXPECT_EQ(j["exit_code"], 2);
  ASSERT_EQ(j["shards"].size(), 2u);
  bool found = false;
  for (const auto& s : j["shards"]) {
    if (s["name"] == "missing.mlmodelc") {
      found = true;
      EXPECT_EQ(s["verdict"], "error");
      EXPECT_FALSE(s["error"].is_null());
    } else {
      EXPECT_EQ(s["verdict"], "pass");
    }
  }
  EXPECT_TRUE(found);
  auto xml = sg::read_file(junit);
  ASSERT_TRUE(xml.is_ok());
  EXPECT_NE(xml->find("errors=\"1\""), std::string::npos);
}

TEST_F(AneValidator, GlobsSkipNonModelsAndSelectionSplitsTheList) {
  std::string json = temp_path("glob.json");
  CliRun r = run_ane("'" + kCorpusRel + "*' --min-residency 0 --json " + json);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read_json(json)["counts"]["shards"], 6);
  r = run_ane("'" + kCorpusRel + "*' --min-residency 0 --shard-index 1 --shard-count 4 --json " +
              json);
  EXPECT_EQ(r.code, 0) << r.output;
  auto j = read_json(json);
  ASSERT_EQ(j["counts"]["shards"], 2);  // positions 1 and 5 of the sorted six
  EXPECT_EQ(j["shards"][0]["name"], "silero-vad-unified-v6.0.0.mlpackage");
  EXPECT_EQ(j["shards"][1]["name"], "unified_palette_4bit.mlpackage");
  // More slices than shards: the empty slice is a no-op pass with a note, not an error.
  r = run_ane("'" + kCorpusRel + "*' --shard-index 6 --shard-count 7 --json " + json);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("slice 6 of 7 selects none of the 6 shards: nothing to check in this job"),
            std::string::npos) << r.output;
  EXPECT_EQ(read_json(json)["verdict"], "empty-slice");
  r = run_ane("'" + kCorpusRel + "nothing*'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing*"), std::string::npos);
}

TEST_F(AneValidator, ImportsAMatchingPlanAndRefusesAnother) {
  std::string plan = "tests/data/placement/silero-vad-fp16.plan.json";
  CliRun r = run_ane(kFp16Rel + " --plan " + plan + " --min-residency 90");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cost-weighted 90.5%"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", plan"), std::string::npos) << r.output;
  r = run_ane(kCorpusRel + "unified_int8.mlmodelc --plan " + plan);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("sha256_model_mil"), std::string::npos) << r.output;
  r = run_ane(kFp16Rel + " --plan tests/data/placement/no-such-plan.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-plan.json"), std::string::npos) << r.output;
}

TEST_F(AneValidator, PairsPlansWithShardsByNameOrDirectory) {
  std::string plan = "tests/data/placement/silero-vad-fp16.plan.json";
  std::string json = temp_path("pairs.json");
  // Two shards: the dump's model.name picks the fp16 one; the int8 one stays predicted.
  CliRun r = run_ane(kFp16Rel + " " + kCorpusRel + "unified_int8.mlmodelc --plan " + plan +
                     " --min-residency 0 --json " + json);
  EXPECT_EQ(r.code, 0) << r.output;
  auto j = read_json(json);
  ASSERT_EQ(j["shards"].size(), 2u);
  for (const auto& s : j["shards"]) {
    EXPECT_EQ(s["placement_source"], s["name"] == "unified_int8.mlmodelc" ? "predicted" : "plan");
  }
  // --plan-dir reads every *.json there and pairs by fingerprint, else by the recorded name
  // (a schema-1 dump has only model.name); a shard without a dump is an input error.
  auto dir = std::filesystem::path(temp_path("plans"));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(SG_SOURCE_DIR "/") + plan,
                             dir / "silero-vad-unified-v6.0.0.mlmodelc.json",
                             std::filesystem::copy_options::overwrite_existing);
  r = run_ane(kFp16Rel + " --plan-dir " + dir.string() + " --min-residency 90");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(", plan"), std::string::npos) << r.output;
  r = run_ane(kCorpusRel + "unified_int8.mlmodelc --plan-dir " + dir.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no dump for shard"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// Issue 13: "--plan DUMP SHARD" and "--check fp16-io SHARD" (the order --help shows) took the
// shard as a second option value and then said "no shard given". Each occurrence takes one.
TEST_F(AneValidator, OptionsDoNotSwallowTheShard) {
  const std::string plan = "tests/data/placement/mac/unified_int8.mlpackage.json";
  CliRun r = run_ane("--plan " + plan + " " + kCorpusRel + "unified_int8.mlmodelc");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("unified_int8.mlmodelc"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", plan"), std::string::npos) << r.output;
  r = run_ane("--check fp16-io " + kFp16Rel);
  EXPECT_EQ(r.code, 1) << r.output;  // its input is fp32: the check ran on the shard
  EXPECT_NE(r.output.find("input 'audio_input' is fp32"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no shard given"), std::string::npos) << r.output;
  // repeated options still collect every value
  r = run_ane("--check fp16-io --check dims " + kFp16Rel);
  EXPECT_NE(r.output.find("check fp16-io failed"), std::string::npos) << r.output;
}

TEST_F(AneValidator, ContractChecksFailTheGateWithNames) {
  CliRun r = run_ane(kFp16Rel + " --check compression=4096 --check fp16-io --check dims");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("check compression=4096 failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stft_forward_basis_to_fp16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("input 'audio_input' is fp32"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("check dims failed"), std::string::npos) << r.output;
  r = run_ane(kCorpusRel + "unified_palette_4bit.mlmodelc --check compression=4096");
  EXPECT_EQ(r.code, 0) << r.output;  // every large weight is palettized
  r = run_ane(kFp16Rel + " --check speed");
  EXPECT_EQ(r.code, 2) << r.output;
}

// LLM fixtures (tests/generators/generate_fixtures.py). Skipped only while the fixture folder
// does not exist yet; a missing file inside it fails.
class AneValidatorLlm : public AneValidator {
 protected:
  void SetUp() override {
    AneValidator::SetUp();
    ASSERT_TRUE(std::filesystem::exists(std::string(SG_SOURCE_DIR "/") + kLlm)) << kLlm << " is missing";
  }
};

TEST_F(AneValidatorLlm, Int4PerBlockShardFailsNamingR22) {
  std::string json = temp_path("int4.json");
  CliRun r = run_ane(kLlm + "attention_int4blk.mlpackage --min-residency 100 --json " + json);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("R22 x"), std::string::npos) << r.output;
  auto j = read_json(json);
  int r22 = 0;
  for (const auto& op : j["shards"][0]["ops"]) {
    if (op["rule"] == "R22") {
      ++r22;
      EXPECT_EQ(op["placement"], "CPU");
      EXPECT_NE(op["detail"].get<std::string>().find("constexpr_blockwise_shift_scale"), std::string::npos);
    }
  }
  EXPECT_GT(r22, 0);
}

TEST_F(AneValidatorLlm, LutGroupedShardPassesAndCompileTimeOpsDoNotCount) {
  std::string json = temp_path("lut4.json");
  CliRun r = run_ane(kLlm + "attention_lut4.mlpackage --min-residency 100 --json " + json);
  EXPECT_EQ(r.code, 0) << r.output;
  auto j = read_json(json);
  int compile_time = 0;
  for (const auto& op : j["shards"][0]["ops"]) {
    std::string type = op["type"];
    bool ct = type == "const" || type.rfind("constexpr_", 0) == 0;
    EXPECT_EQ(op["class"], ct ? "compile-time" : "compute") << type;
    if (ct) {
      ++compile_time;
      EXPECT_EQ(op["placement"], "NO_DEVICE");
    }
  }
  EXPECT_GT(compile_time, 0);
  EXPECT_EQ(j["shards"][0]["summary"]["compile_time_ops"], compile_time);
}

TEST_F(AneValidatorLlm, EveryFixtureExitsZeroOrOne) {
  CliRun r = run_ane("'" + kLlm + "*'");
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.output;
}

}  // namespace
