// Contract checks on constructed programs: each check passes on a conforming program and fails
// naming the offenders on a broken one.
#include "placement/program_builder.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

namespace sg {
namespace {

using test::ProgramBuilder;

using test::F16;

ContractCheck parse(const std::string& spec) {
  auto c = parse_contract_check(spec);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : ContractCheck{};
}

// A shard with one LUT-compressed weight (64x64) and one plain fp16 weight (128x64 = 16 KiB).
ProgramBuilder mixed_shard() {
  ProgramBuilder b;
  b.input("x", F16, {1, 64});
  b.blob_const("w1_idx", DType::kU4, {64, 64});
  b.blob_const("w1_lut", F16, {64, 1, 16, 1});
  b.op("constexpr_lut_to_dense", {{"w1", F16, {64, 64}}}, {{"indices", {"w1_idx"}}, {"lut", {"w1_lut"}}});
  b.op("linear", {{"h", F16, {1, 64}}}, {{"weight", {"w1"}}, {"x", {"x"}}});
  b.blob_const("w2", F16, {128, 64});
  b.op("linear", {{"y", F16, {1, 128}}}, {{"weight", {"w2"}}, {"x", {"h"}}});
  b.blob_const("bias_small", F16, {64});
  b.op("add", {{"z", F16, {1, 64}}}, {{"x", {"h"}}, {"y", {"bias_small"}}});
  b.output("y").output("z");
  return b;
}

TEST(ContractCheckParse, AcceptsSpecsAndSizeSuffixes) {
  EXPECT_EQ(parse("compression=1048576").bytes, 1048576u);
  EXPECT_EQ(parse("compression=1MiB").bytes, 1048576u);
  EXPECT_EQ(parse("weight-budget=200MB").bytes, 200000000u);
  EXPECT_EQ(parse("weight-budget=2GiB").bytes, uint64_t{2} << 30);
  EXPECT_EQ(parse("fp16-io").kind, ContractCheck::Kind::kFp16Io);
  EXPECT_EQ(parse("dims").kind, ContractCheck::Kind::kDims);
  for (const char* bad : {"compression", "compression=", "compression=12XB", "fp16-io=1", "speed",
                          "weight-budget=99999999999999999999", "weight-budget=20000000000GiB"}) {
    auto c = parse_contract_check(bad);
    EXPECT_FALSE(c.is_ok()) << bad;
    if (!c.is_ok()) {
      EXPECT_EQ(c.status().code(), ErrorCode::kUsage);
    }
  }
}

TEST(ContractChecks, CompressionNamesUncompressedLargeWeights) {
  ProgramBuilder b = mixed_shard();
  auto r = run_contract_checks(b.program, {}, {parse("compression=1024")});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].passed);
  ASSERT_EQ(r[0].offenders.size(), 1u);  // w2 (16384 bytes); bias 128 bytes is under the floor
  EXPECT_NE(r[0].offenders[0].find("'w2'"), std::string::npos) << r[0].offenders[0];
  EXPECT_NE(r[0].offenders[0].find("16384 bytes"), std::string::npos);
  // The LUT indices and table feed a constexpr op, so they are compressed data, not weights.
  r = run_contract_checks(b.program, {}, {parse("compression=16384")});
  EXPECT_TRUE(r[0].passed) << r[0].detail;
}

TEST(ContractChecks, WeightBudgetUsesTheShardsWeightBytes) {
  ProgramBuilder b = mixed_shard();
  ModelFacts facts;
  facts.weight_bytes = 5000;
  auto r = run_contract_checks(b.program, facts, {parse("weight-budget=4999"), parse("weight-budget=5000")});
  EXPECT_FALSE(r[0].passed);
  EXPECT_TRUE(r[1].passed);
  // Without file sizes the blob-backed values are summed from their types:
  // 64*64/2 + 64*16*2 + 128*64*2 + 64*2 = 2048 + 2048 + 16384 + 128.
  r = run_contract_checks(b.program, {}, {parse("weight-budget=20608"), parse("weight-budget=20607")});
  EXPECT_TRUE(r[0].passed) << r[0].detail;
  EXPECT_FALSE(r[1].passed) << r[1].detail;
}

TEST(ContractChecks, Fp16IoFromModelInfoOrProgram) {
  ProgramBuilder b;
  b.input("ids", DType::kI32, {1, 8});
  b.input("x", DType::kF32, {1, 8});
  b.op("cast", {{"y", F16, {1, 8}}}, {{"x", {"x"}}});
  b.output("y");
  auto r = run_contract_checks(b.program, {}, {parse("fp16-io")});
  EXPECT_FALSE(r[0].passed);
  ASSERT_EQ(r[0].offenders.size(), 1u);  // int32 token ids are allowed
  EXPECT_EQ(r[0].offenders[0], "input 'x' is fp32");

  ModelInfo info;
  info.inputs.push_back(FeatureInfo{"x", "", F16, {1, 8}});
  info.outputs.push_back(FeatureInfo{"logits", "", DType::kF32, {1, 8}});
  ModelFacts facts;
  facts.info = &info;
  r = run_contract_checks(b.program, facts, {parse("fp16-io")});
  ASSERT_EQ(r[0].offenders.size(), 1u);
  EXPECT_EQ(r[0].offenders[0], "output 'logits' is fp32");
}

TEST(ContractChecks, DimsAndRankLimits) {
  ProgramBuilder b;
  b.input("x", F16, {1, 4096});
  b.blob_const("w", F16, {32000, 4096});  // weights are not activations: not checked
  b.op("linear", {{"logits", F16, {1, 32000}}}, {{"weight", {"w"}}, {"x", {"x"}}});
  b.op("reshape", {{"r", F16, {1, 1, 1, 1, 1, 4096}}}, {{"x", {"x"}}});
  b.op("relu", {{"ok", F16, {1, 16384}}}, {{"x", {"x"}}});
  auto r = run_contract_checks(b.program, {}, {parse("dims")});
  EXPECT_FALSE(r[0].passed);
  ASSERT_EQ(r[0].offenders.size(), 2u);
  EXPECT_NE(r[0].offenders[0].find("'logits'"), std::string::npos);
  EXPECT_NE(r[0].offenders[0].find("32000 > 16384"), std::string::npos);
  EXPECT_NE(r[0].offenders[1].find("'r'"), std::string::npos);
  EXPECT_NE(r[0].offenders[1].find("rank 6 > 5"), std::string::npos);
}

}  // namespace
}  // namespace sg
