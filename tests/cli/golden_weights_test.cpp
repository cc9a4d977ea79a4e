// golden-validator weights: exit codes, baseline pairing, report files, usage errors.
#include "shardgate/io.h"

#include "support/cli_run.h"
#include "support/json_schema_lite.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace sg {
namespace {

CliRun weights(const std::string& args) {
  return run_command(std::string(SG_BINARY_DIR "/validators/golden-validator weights ") + args);
}

const std::string kShards = "goldens/sample/shards/";

TEST(GoldenWeightsCli, Int8ChainIsFlaggedLut4ChainIsClean) {
  // The tests run from the repository root (WORKING_DIRECTORY in tests/CMakeLists.txt).
  CliRun int8 = weights("'" + kShards + "*_int8.mlpackage' --baseline-replace _int8=_fp16");
  EXPECT_EQ(int8.code, 1) << int8.output;
  EXPECT_NE(int8.output.find("weights: 16 shard(s), 16 weight(s) flagged -> flagged"),
            std::string::npos)
      << int8.output;
  CliRun lut4 = weights("'" + kShards + "*_lut4.mlpackage' --baseline-replace _lut4=_fp16");
  EXPECT_EQ(lut4.code, 0) << lut4.output;
  EXPECT_NE(lut4.output.find("0 weight(s) flagged -> clean"), std::string::npos) << lut4.output;
}

TEST(GoldenWeightsCli, WritesEveryReportForm) {
  const auto dir = std::filesystem::temp_directory_path() / "sg_weights_cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string j = (dir / "w.json").string(), x = (dir / "w.xml").string(),
                    m = (dir / "w.md").string();
  CliRun r = weights(kShards + "L0_moe_p0_int8.mlpackage --baseline " + kShards +
                     "L0_moe_p0_fp16.mlpackage --json " + j + " --junit " + x + " --markdown " + m);
  EXPECT_EQ(r.code, 1) << r.output;
  auto json = read_file(j);
  auto schema = read_file(std::string(SG_SOURCE_DIR) + "/reports/schema/weight-diagnostics.schema.json");
  ASSERT_TRUE(json.is_ok() && schema.is_ok());
  EXPECT_EQ(testing::json_schema_violations(*schema, *json), std::vector<std::string>{});
  const auto doc = nlohmann::json::parse(*json);
  EXPECT_EQ(doc["summary"]["flagged"], 2);
  EXPECT_EQ(doc["command_line"].back(), m);
  EXPECT_TRUE(doc["shards"][0]["weights"][1]["baseline"].contains("rel_error"));
  EXPECT_TRUE(read_file(x).is_ok());
  EXPECT_TRUE(read_file(m).is_ok());
  std::filesystem::remove_all(dir);
}

TEST(GoldenWeightsCli, BadInputIsExitTwoNamingWhatIsWrong) {
  CliRun missing = weights("/nonexistent/x.mlpackage");
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent/x.mlpackage"), std::string::npos) << missing.output;
  CliRun both = weights(kShards + "L0_attn_int8.mlpackage --baseline a --baseline-replace a=b");
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("not both"), std::string::npos) << both.output;
  CliRun absent = weights(kShards + "L0_attn_int8.mlpackage --baseline-replace _q8=_fp16");
  EXPECT_EQ(absent.code, 2) << absent.output;
  EXPECT_NE(absent.output.find("'_q8' does not occur"), std::string::npos) << absent.output;
  CliRun many = weights("'" + kShards + "L0_*_int8.mlpackage' --baseline x");
  EXPECT_EQ(many.code, 2) << many.output;
  EXPECT_NE(many.output.find("use --baseline-replace"), std::string::npos) << many.output;
}

}  // namespace
// A weight.bin cut short is refused as exec and ane-validator refuse it, even though the
// diagnostics read only compressed weights (this fixture's truncated records are plain ones).
// A baseline of another model pairs none of the weights: nothing was measured against it, so
// it is bad input, not CLEAN. It used to exit 0 "clean" for the LUT4 pack (palettes have no
// outlier_scale, and baseline_error never ran), every rel.err "-".
TEST(GoldenWeightsCli, ABaselineThatPairsNoWeightIsExitTwo) {
  CliRun wrong = weights(kShards + "L0_moe_p0_lut4.mlpackage --baseline " + kShards + "L0_attn_fp16.mlpackage");
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("usage error: " + kShards + "L0_moe_p0_lut4.mlpackage: the baseline " + kShards +
                              "L0_attn_fp16.mlpackage pairs with none of its 4 compressed weight(s) (weight "
                              "'router_weight_0_palettized', use router.weight: none: no weight of the baseline "
                              "feeds 'router.weight')"),
            std::string::npos)
      << wrong.output;
  // Its own baseline pairs every weight.
  CliRun right = weights(kShards + "L0_moe_p0_lut4.mlpackage --baseline " + kShards + "L0_moe_p0_fp16.mlpackage");
  EXPECT_EQ(right.code, 0) << right.output;
}

TEST(GoldenWeightsCli, TruncatedWeightFileIsExitTwoNamingFileAndOffset) {
  const auto dir = std::filesystem::temp_directory_path() / "sg_weights_truncated";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto model = dir / "t1.mlmodelc";
  std::filesystem::copy(std::string(SG_TEST_DATA_DIR) + "/exec/compiled_style/compiled_style.mlmodelc",
                        model, std::filesystem::copy_options::recursive);
  std::filesystem::resize_file(model / "weights/weight.bin", 1000);
  CliRun r = weights(model.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("format error: " + (model / "weights/weight.bin").string() +
                          ": blob metadata at offset "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("of the 1000-byte file"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// An FP16 shard has no compressed weight: nothing is diagnosed, so nothing passes (README,
// Exit codes): exit 1, "nothing checked" in the terminal, verdict no_evidence in the JSON.
TEST(GoldenWeightsCli, ShardWithoutCompressedWeightIsNoEvidenceNotPass) {
  const auto dir = std::filesystem::temp_directory_path() / "sg_weights_none";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string j = (dir / "w.json").string();
  CliRun r = weights(kShards + "L0_moe_p0_fp16.mlpackage --json " + j);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no compressed weight: nothing to diagnose (an unquantized build?)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("-> nothing checked"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("CLEAN"), std::string::npos) << r.output;
  auto json = read_file(j);
  auto schema = read_file(std::string(SG_SOURCE_DIR) + "/reports/schema/weight-diagnostics.schema.json");
  ASSERT_TRUE(json.is_ok() && schema.is_ok());
  EXPECT_EQ(testing::json_schema_violations(*schema, *json), std::vector<std::string>{});
  const auto doc = nlohmann::json::parse(*json);
  EXPECT_EQ(doc["verdict"], "no_evidence");
  EXPECT_EQ(doc["exit_code"], 1);
  // With a quantized shard beside it, the run judges that one (and names the other as unchecked).
  CliRun mixed = weights(kShards + "L0_moe_p0_fp16.mlpackage " + kShards + "L0_moe_p0_lut4.mlpackage");
  EXPECT_EQ(mixed.code, 0) << mixed.output;
  EXPECT_NE(mixed.output.find("NONE   " + kShards + "L0_moe_p0_fp16.mlpackage"), std::string::npos)
      << mixed.output;
  std::filesystem::remove_all(dir);
}

}  // namespace sg
