// Placement on the real corpus models, both forms. The op count is checked against model.mil
// (every statement) and against the compiler's own histogram in metadata.json, which counts
// every op except const.
#include "shardgate/blob.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace sg {
namespace {

using sg::testing::kSileroDir;
using sg::testing::kSileroModels;

ShardCheck check(const std::string& path) {
  ShardCheckOptions options;
  options.threshold = ResidencyThreshold{100, "test", ""};
  return check_shard(path, options);
}

// Statements in model.mil: lines of the form "<type> <names> = <op>(...)[...];".
int64_t count_statements(const std::string& mil) {
  static const std::regex kStatement(R"(^\s+.*\s=\s[a-z_0-9.]+\(.*;\s*$)");
  int64_t n = 0;
  size_t start = 0;
  while (start < mil.size()) {
    size_t end = mil.find('\n', start);
    if (end == std::string::npos) end = mil.size();
    if (std::regex_match(mil.substr(start, end - start), kStatement)) ++n;
    start = end + 1;
  }
  return n;
}

TEST(CorpusPlacement, OpCountsMatchModelMilAndHistogram) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    std::string dir = kSileroDir + name + ".mlmodelc";
    ShardCheck c = check(dir);
    ASSERT_FALSE(c.error) << c.error->to_string();
    auto mil = read_file(dir + "/model.mil");
    ASSERT_TRUE(mil.is_ok());
    EXPECT_EQ(c.summary.total_ops, count_statements(*mil));
    auto meta = read_file(dir + "/metadata.json");
    ASSERT_TRUE(meta.is_ok());
    auto j = nlohmann::json::parse(*meta);
    int64_t histogram = 0;
    for (auto& [op, n] : j[0]["mlProgramOperationTypeHistogram"].items()) histogram += n.get<int64_t>();
    int64_t consts = 0;
    for (const OpPlacement& op : c.ops) consts += op.type == "const";
    EXPECT_EQ(c.summary.total_ops - consts, histogram);
    // Compile-time ops never count: const + constexpr_* = compile-time ops.
    int64_t compile_time = 0;
    for (const OpPlacement& op : c.ops) compile_time += op.op_class == OpClass::kCompileTime;
    EXPECT_EQ(c.summary.compile_time_ops, compile_time);
    EXPECT_EQ(c.summary.compute_ops, 48);
  }
}

TEST(CorpusPlacement, BothFormsGiveTheSameOpList) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    ShardCheck compiled = check(kSileroDir + name + ".mlmodelc");
    ShardCheck package = check(kSileroDir + name + ".mlpackage");
    ASSERT_FALSE(compiled.error);
    ASSERT_FALSE(package.error) << package.error->to_string();
    ASSERT_EQ(compiled.ops.size(), package.ops.size());
    for (size_t i = 0; i < compiled.ops.size(); ++i) {
      const OpPlacement& a = compiled.ops[i];
      const OpPlacement& b = package.ops[i];
      EXPECT_EQ(a.function, b.function);
      EXPECT_EQ(a.block_path, b.block_path);
      EXPECT_EQ(a.type, b.type) << i;
      EXPECT_EQ(a.outputs, b.outputs) << i;
      EXPECT_EQ(a.rule_id, b.rule_id) << a.outputs[0];
    }
  }
}

TEST(CorpusPlacement, SileroPredictionsFollowTheRules) {
  ShardCheck fp16 = check(kSileroDir + "silero-vad-unified-v6.0.0.mlmodelc");
  ShardCheck int8 = check(kSileroDir + "unified_int8.mlmodelc");
  ShardCheck lut4 = check(kSileroDir + "unified_palette_4bit.mlmodelc");
  for (ShardCheck* c : {&fp16, &int8, &lut4}) {
    ASSERT_FALSE(c->error);
    EXPECT_FALSE(c->verdict.passed);  // the fp32 LSTM path is off the ANE
    for (const OpPlacement& op : c->ops) {
      if (op.type == "lstm") {
        EXPECT_EQ(op.rule_id, "G2");
      }
      if (op.type == "const") {
        EXPECT_EQ(op.rule_id, "R19");
      }
      if (op.outputs[0] == "audio_input_to_fp16" || op.outputs[0] == "vad_output") {
        EXPECT_EQ(op.rule_id, "G2a");
      }
    }
  }
  // Count conv rules: the STFT basis conv keeps a plain fp16 weight in every variant; the
  // encoder convs read quantized weights in the int8 and 4-bit models.
  auto conv_rules = [](const ShardCheck& c) {
    std::map<std::string, int> rules;
    for (const OpPlacement& op : c.ops) {
      if (op.type == "conv") rules[op.rule_id]++;
    }
    return rules;
  };
  EXPECT_EQ(conv_rules(fp16), (std::map<std::string, int>{{"R1", 6}}));
  EXPECT_EQ(conv_rules(int8), (std::map<std::string, int>{{"R1", 1}, {"R21", 5}}));
  EXPECT_EQ(conv_rules(lut4), (std::map<std::string, int>{{"R1", 1}, {"R20", 5}}));
}

TEST(CorpusPlacement, PerBlockQuantizedWeightFallsBack) {
  // tests/data/constexpr fixtures (coremltools-built): int4 per-block vs int8 per-channel.
  ShardCheck block = check(SG_TEST_DATA_DIR "/constexpr/bss_int4_block.mlpackage");
  ASSERT_FALSE(block.error) << block.error->to_string();
  EXPECT_FALSE(block.verdict.passed);
  ASSERT_FALSE(block.verdict.failures.empty());
  EXPECT_NE(block.verdict.failures[0].find("R22"), std::string::npos) << block.verdict.failures[0];
  ShardCheck channel = check(SG_TEST_DATA_DIR "/constexpr/bss_int8_per_channel.mlpackage");
  ASSERT_FALSE(channel.error);
  EXPECT_TRUE(channel.verdict.passed);
}

// A private copy of the fp16 Silero model whose weight.bin gets edited by `edit`.
template <typename Edit>
ShardCheck check_edited_copy(const std::string& tag, Edit edit) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("sg_placement_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path copy = dir / "silero.mlmodelc";
  fs::create_directories(copy);
  fs::copy(kSileroDir + "silero-vad-unified-v6.0.0.mlmodelc", copy, fs::copy_options::recursive);
  edit((copy / "weights" / "weight.bin").string());
  ShardCheck c = check(copy.string());
  fs::remove_all(dir);
  return c;
}

TEST(CorpusPlacement, ListingNeverInterpretsWeightData) {
  // Every weight's data bytes overwritten (metadata records kept): the listing is unchanged,
  // because only the 64-byte records and the file size are looked at.
  ShardCheck original = check(kSileroDir + "silero-vad-unified-v6.0.0.mlmodelc");
  ShardCheck listed = check_edited_copy("garbage_data", [](const std::string& weights) {
    auto blob = BlobFile::open(weights);
    ASSERT_TRUE(blob.is_ok());
    auto records = (*blob)->walk();
    ASSERT_TRUE(records.is_ok());
    ASSERT_FALSE(records->empty());
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    for (const BlobInfo& r : *records) {
      std::string junk(r.size_bytes, '\x7f');
      f.seekp(static_cast<std::streamoff>(r.data_offset));
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  });
  ASSERT_FALSE(listed.error) << listed.error->to_string();
  EXPECT_EQ(listed.summary.total_ops, original.summary.total_ops);
  EXPECT_EQ(listed.summary.on_ane, original.summary.on_ane);
  EXPECT_EQ(listed.program_sha256, original.program_sha256);
}

TEST(CorpusPlacement, CorruptWeightMetadataIsAnInputError) {
  ShardCheck truncated = check_edited_copy("truncated", [](const std::string& weights) {
    std::filesystem::resize_file(weights, std::filesystem::file_size(weights) / 2);
  });
  ASSERT_TRUE(truncated.error.has_value());
  EXPECT_NE(truncated.error->message().find("weight.bin"), std::string::npos)
      << truncated.error->message();
  EXPECT_EQ(exit_code(truncated.error->code()), kExitBadInput);
}

TEST(CorpusPlacement, ABrokenShardIsAnInputErrorNamingIt) {
  ShardCheck c = check(kSileroDir + "does-not-exist.mlmodelc");
  ASSERT_TRUE(c.error.has_value());
  EXPECT_NE(c.error->message().find("does-not-exist.mlmodelc"), std::string::npos);
  EXPECT_NE(exit_code(c.error->code()), kExitPass);
}

}  // namespace
}  // namespace sg
