// Provenance in run reports: every shard a chain executed is named with its fingerprint (over
// the program and every weight file), so two builds with the same program and different weights
// never share an identity in a report, and the identity survives the JSON round trip that
// `regate` relies on.
#include "shardgate/chain.h"

#include "shardgate/golden.h"
#include "shardgate/golden_report.h"
#include "shardgate/io.h"
#include "shardgate/shard.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kSampleDir;

class ChainProvenance : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sg_provenance_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Flips one byte in the middle of the shard's weight file (past the blob header).
void flip_weight_byte(const fs::path& shard) {
  const fs::path weights = shard / "Data/com.apple.CoreML/weights/weight.bin";
  std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << weights;
  const auto size = static_cast<std::streamoff>(fs::file_size(weights));
  f.seekg(size / 2);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x01);
  f.seekp(size / 2);
  f.write(&c, 1);
}

TEST_F(ChainProvenance, TwoBuildsWithDifferentWeightsNeverShareAFingerprintInAReport) {
  // Same program, different weights: copy one sample shard twice and change one weight byte.
  const fs::path a = dir_ / "a.mlpackage";
  const fs::path b = dir_ / "b.mlpackage";
  fs::copy(kSampleDir + "shards/L0_attn_fp16.mlpackage", a, fs::copy_options::recursive);
  fs::copy(kSampleDir + "shards/L0_attn_fp16.mlpackage", b, fs::copy_options::recursive);
  flip_weight_byte(b);
  auto sa = Shard::open(a.string());
  auto sb = Shard::open(b.string());
  ASSERT_TRUE(sa.is_ok() && sb.is_ok());
  ASSERT_EQ((*sa)->program_sha256(), (*sb)->program_sha256()) << "the programs must be equal";

  const std::string chain_json = R"({"schema": "shardgate/chain@1", "name": "twins",
    "goldens": ")" + kSampleDir + R"(goldens",
    "inputs": {"embed": "golden:embed"},
    "steps": [
      {"id": "build.a", "layer": 0, "shard": "a.mlpackage", "inputs": {"hidden": "embed"}, "outputs": {"hidden_out": "out.a"}},
      {"id": "build.b", "layer": 0, "shard": "b.mlpackage", "inputs": {"hidden": "embed"}, "outputs": {"hidden_out": "out.b"}}],
    "checkpoints": [
      {"tensor": "out.a", "golden": "hidden.0", "kind": "attn_out", "layer": 0},
      {"tensor": "out.b", "golden": "hidden.1", "kind": "attn_out", "layer": 1}]})";
  const std::string chain_path = (dir_ / "chain.json").string();
  ASSERT_TRUE(write_file_atomic(chain_path, chain_json).is_ok());
  auto chain = load_chain_manifest(chain_path);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  auto goldens = open_golden_source(kSampleDir + "goldens");
  ASSERT_TRUE(goldens.is_ok());

  ChainFidelityOptions o;
  o.modes = {ChainMode::kFreeRunning, ChainMode::kTeacherForced};
  auto run = run_chain_fidelity(*chain, **goldens, o);
  ASSERT_TRUE(run.is_ok()) << run.status().to_string();
  auto report = make_golden_report(*run, builtin_gate_policy(), false, "test");
  ASSERT_TRUE(report.is_ok());
  report->command_line = {"golden-validator", "run", chain_path};

  // Every shard once (not once per mode), with the fingerprint of the exact files it ran.
  const nlohmann::json j = nlohmann::json::parse(golden_report_json(*report));
  ASSERT_EQ(j["provenance"]["shards"].size(), 2u) << j["provenance"]["shards"].dump();
  EXPECT_EQ(j["provenance"]["shards"][0]["id"], "build.a");
  EXPECT_EQ(j["provenance"]["shards"][1]["id"], "build.b");
  EXPECT_EQ(j["provenance"]["shards"][0]["fingerprint"], *(*sa)->fingerprint());
  EXPECT_EQ(j["provenance"]["shards"][1]["fingerprint"], *(*sb)->fingerprint());
  EXPECT_NE(j["provenance"]["shards"][0]["fingerprint"], j["provenance"]["shards"][1]["fingerprint"]);
  EXPECT_EQ(j["command_line"][2], chain_path);

  // The golden dump and the chain are identified by file hashes.
  std::set<std::string> roles;
  for (const auto& in : j["provenance"]["inputs"]) {
    roles.insert(in["role"].get<std::string>());
    EXPECT_EQ(in["sha256"].get<std::string>().size(), 64u) << in.dump();
  }
  EXPECT_EQ(roles, (std::set<std::string>{"chain", "reference"}));

  // The saved report keeps all of it (regate re-emits what it read).
  auto back = parse_golden_report_json(golden_report_json(*report), "r.json");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->run.shards.size(), 2u);
  EXPECT_EQ(back->run.shards[1].fingerprint, *(*sb)->fingerprint());
  EXPECT_EQ(back->command_line, report->command_line);

  // The human-readable reports name the builds too.
  const std::string md = golden_report_markdown(*report);
  const std::string junit = golden_report_junit(*report);
  const std::string html = golden_report_html(*report);
  for (const std::string* text : {&md, &junit, &html}) {
    EXPECT_NE(text->find(*(*sa)->fingerprint()), std::string::npos) << *text;
    EXPECT_NE(text->find(*(*sb)->fingerprint()), std::string::npos) << *text;
  }
}

}  // namespace
}  // namespace sg
