// The three messages that named no file (issue 14): each now names the file the problem is in.
//  - exec --input with a file of the wrong shape named the shard only, not the .npy;
//  - compare of two dumps whose checkpoint shapes differ named neither dump;
//  - an inline literal of a .mlpackage refused by the memory budget named nothing at all
//    ("memory budget: tensor [4] of int32 needs ..."), not even that it was reading a model.
#include "support/cli_run.h"

#include "support/temp_dir_test.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

using sg::testing::kGoldenValidator;
using sg::testing::kSampleDir;

class MessagesNameTheFile : public sg::testing::TempDirTest {
 protected:
  MessagesNameTheFile() : TempDirTest("sg_names_") {}
};

TEST_F(MessagesNameTheFile, ExecInputOfTheWrongShape) {
  // logits.npy is fp16 [1, 8, 128]; the attention layer's input 'hidden' is fp16 [1, 8, 64].
  const std::string file = kSampleDir + "goldens/logits.npy";
  const sg::CliRun r =
      sg::run_killed_after(60, kGoldenValidator + " exec " + kSampleDir +
                                   "shards/L0_attn_fp16.mlpackage --input hidden=" + file);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--input hidden=" + file + ": "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the file holds shape [1, 8, "), std::string::npos) << r.output;
}

TEST_F(MessagesNameTheFile, CompareOfDumpsWhoseShapesDiffer) {
  // A candidate dump whose 'logits' entry holds the embedding (fp16 [1, 8, 64]) instead of the
  // logits; manifest and sha256 are consistent, so only the shape differs from the reference.
  const fs::path cand = dir_ / "cand";
  fs::copy(kSampleDir + "goldens", cand, fs::copy_options::recursive);
  std::ifstream in(cand / "manifest.json");
  std::string m((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const sg::CliRun sums = sg::run_killed_after(
      60, "sha256sum " + (cand / "embed.npy").string() + " " + (cand / "logits.npy").string());
  ASSERT_EQ(sums.code, 0) << sums.output;
  const std::string embed_sha = sums.output.substr(0, 64);
  const std::string logits_sha = sums.output.substr(sums.output.find('\n') + 1, 64);
  fs::copy_file(cand / "embed.npy", cand / "logits.npy", fs::copy_options::overwrite_existing);
  const size_t at = m.find(logits_sha);
  ASSERT_NE(at, std::string::npos);
  m.replace(at, 64, embed_sha);
  // The manifest records the shape too: make it the embedding's.
  const size_t entry = m.rfind("\"logits\"", at);
  ASSERT_NE(entry, std::string::npos);
  const size_t shape = m.find("\"shape\"", entry);
  const size_t close = m.find(']', shape);
  m.replace(shape, close + 1 - shape, "\"shape\": [1, 8, 64]");
  std::ofstream(cand / "manifest.json") << m;

  const sg::CliRun r =
      sg::run_killed_after(60, kGoldenValidator + " compare --candidate " + cand.string() +
                                   " --reference " + kSampleDir + "goldens");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(cand.string() + " vs " + kSampleDir + "goldens: checkpoint 'logits"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("shape mismatch"), std::string::npos) << r.output;
}

TEST_F(MessagesNameTheFile, InlineLiteralOverTheMemoryBudget) {
  // A budget of 4 KiB is spent while the program's inline literals are decoded.
  const std::string shard = kSampleDir + "shards/L0_attn_lut4.mlpackage";
  const sg::CliRun r =
      sg::run_killed_after(60, kGoldenValidator + " exec " + shard + " --seed 1 --max-memory 4K");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("memory budget: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(shard + "/Data/com.apple.CoreML/model.mlmodel: offset "),
            std::string::npos)
      << r.output;
}

}  // namespace
