// ane-validator given a golden-validator chain manifest: it stands for the manifest's distinct
// shards, resolved against the manifest's directory, each gated as if listed; a .json that is
// not a chain manifest is exit 2 naming the file and what is wrong. Runs the built binary
// (build the ane-validator target first).
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
#include <set>
#include <span>
#include <string>

namespace {

namespace fs = std::filesystem;
using sg::CliRun;

using sg::testing::kAneValidator;
const std::string kChain = "goldens/sample/chains/chain_lut4.json";  // from SG_SOURCE_DIR

using sg::testing::slurp;
using sg::testing::spit;

class AneValidatorChain : public sg::testing::TempDirTest {
 protected:
  AneValidatorChain() : TempDirTest("sg_ane_chain_") {}
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAneValidator))
        << kAneValidator << " is missing: build the ane-validator target";
    TempDirTest::SetUp();
  }
  CliRun run_in(const std::string& cwd, const std::string& args) const {
    return sg::run_command("cd '" + cwd + "' && '" + kAneValidator + "' " + args);
  }
};

// The sample chain has 21 steps over 16 shards (combine steps run none, no shard twice). The
// oracle: the same run with those 16 paths listed by hand gives the same shard reports.
TEST_F(AneValidatorChain, ManifestStandsForItsDistinctShards) {
  const auto manifest = nlohmann::json::parse(slurp(SG_SOURCE_DIR "/" + kChain));
  std::set<std::string> expected;
  std::string listed;
  for (const auto& step : manifest["steps"]) {
    if (!step.contains("shard")) continue;
    const std::string path =
        (fs::path(kChain).parent_path() / step["shard"].get<std::string>()).lexically_normal();
    if (expected.insert(path).second) listed += " " + path;
  }
  ASSERT_EQ(expected.size(), 16u);
  ASSERT_EQ(manifest["steps"].size(), 21u);

  const std::string by_chain = (dir_ / "chain.json").string();
  const std::string by_hand = (dir_ / "hand.json").string();
  CliRun r = run_in(SG_SOURCE_DIR, kChain + " --json " + by_chain);
  EXPECT_EQ(r.code, 1) << r.output;  // the sample's MoE routers (topk) are off the ANE
  EXPECT_EQ(r.output.find("not a directory"), std::string::npos) << r.output;
  CliRun hand = run_in(SG_SOURCE_DIR, listed + " --json " + by_hand);
  EXPECT_EQ(hand.code, r.code) << hand.output;

  const auto j = nlohmann::json::parse(slurp(by_chain));
  std::set<std::string> gated;
  for (const auto& s : j["shards"]) gated.insert(s["path"].get<std::string>());
  EXPECT_EQ(gated, expected);
  EXPECT_EQ(j["counts"]["shards"], 16);
  // Compared whole (every count, verdict and op row); not printed, it is megabytes.
  EXPECT_TRUE(j["shards"] == nlohmann::json::parse(slurp(by_hand))["shards"])
      << "the manifest's shards are not gated as the same shards listed by hand";
  // The manifest is an input of the report, with its sha256.
  const std::string text = slurp(SG_SOURCE_DIR "/" + kChain);
  const std::string sha =
      sg::sha256_hex(std::as_bytes(std::span<const char>(text.data(), text.size())));
  ASSERT_EQ(j["provenance"]["inputs"].size(), 1u) << j["provenance"].dump();
  EXPECT_EQ(j["provenance"]["inputs"][0],
            (nlohmann::json{{"role", "chain"}, {"path", kChain}, {"sha256", sha}}));
}

// Paths resolve against the manifest's directory, not the working directory; a shard the
// manifest names twice is gated once; a missing one is reported as a listed shard would be
// (an error in the report, exit 2) while the others are still gated.
TEST_F(AneValidatorChain, ShardsResolveAgainstTheManifestAndAMissingOneIsReported) {
  const std::string silero =
      std::string(SG_TEST_DATA_DIR) + "/corpus/silero-vad/silero-vad-unified-v6.0.0.mlmodelc";
  fs::create_directories(dir_ / "chains");
  spit(dir_ / "chains" / "c.json", R"({"schema": "shardgate/chain@1", "name": "t",
    "inputs": {"x": "golden:x"},
    "steps": [
      {"id": "a", "shard": ")" + silero + R"(", "inputs": {"audio_input": "x"}, "outputs": {"o": "y"}},
      {"id": "b", "shard": ")" + silero + R"(", "inputs": {"audio_input": "y"}, "outputs": {"o": "z"}},
      {"id": "c", "shard": "../sub/missing.mlpackage", "inputs": {"h": "z"}, "outputs": {"o": "w"}}],
    "checkpoints": []})");
  CliRun r = run_in("/", (dir_ / "chains" / "c.json").string() +
                             " --min-residency 0 --json " + (dir_ / "r.json").string() +
                             " --gate " SG_SOURCE_DIR "/gates/residency.json");
  EXPECT_EQ(r.code, 2) << r.output;
  const auto j = nlohmann::json::parse(slurp(dir_ / "r.json"));
  ASSERT_EQ(j["shards"].size(), 2u) << r.output;
  for (const auto& s : j["shards"]) {
    if (s["path"] == silero) {
      EXPECT_EQ(s["verdict"], "pass");
    } else {
      EXPECT_EQ(s["path"], (dir_ / "sub" / "missing.mlpackage").string());
      EXPECT_EQ(s["verdict"], "error");
    }
  }
}

// A .json that is not a chain manifest (a plan dump given in the wrong place, broken JSON, a
// missing file) is exit 2 naming the file and what is wrong, not "not a directory".
TEST_F(AneValidatorChain, JsonThatIsNotAChainManifestIsExitTwoNamingWhatIsWrong) {
  const std::string plan = std::string(SG_TEST_DATA_DIR) + "/placement/silero-vad-fp16.plan.json";
  CliRun r = run_in(dir_.string(), "'" + plan + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("ane-validator: format error: " + plan + ": not a chain manifest"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unknown key"), std::string::npos) << r.output;

  spit(dir_ / "broken.json", "{\"schema\": ");
  r = run_in(dir_.string(), "broken.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("broken.json: not a chain manifest"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at byte"), std::string::npos) << r.output;

  r = run_in(dir_.string(), "absent.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("i/o error: absent.json"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not a directory"), std::string::npos) << r.output;
}

}  // namespace
