// Verdict semantics: size overlays never improve a verdict, a shard over the per-shard weight
// limit fails on its own, the three-valued model verdict, boundary casts counted apart, and
// the residency band.
#include "placement/program_builder.h"
#include "shardgate/placement.h"
#include "shardgate/residency_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;
using test::ProgramBuilder;

using test::F16;

// A private copy of a coremltools-built fixture whose weight.bin gets a sparse tail of `extra`
// bytes: the file is over the limit, the blob records stay valid, no disk space is used.
fs::path sparse_copy(const std::string& fixture, uint64_t extra, const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("sg_verdict_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path copy = dir / fs::path(fixture).filename();
  fs::copy(fixture, copy, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(copy)) {
    if (e.path().filename() == "weight.bin") {
      fs::resize_file(e.path(), fs::file_size(e.path()) + extra);
    }
  }
  return copy;
}

const std::string kLlm = SG_TEST_DATA_DIR "/fixtures/llm/";

TEST(Verdict, AShardOverTheWeightLimitWithCpuOpsFailsTheDefaultGate) {
  // moe_int4blk: per-block int4 weights (R22) and a router topk (R13) put ops on the CPU.
  ShardCheckOptions options;
  ShardCheck small = check_shard(kLlm + "moe_int4blk.mlpackage", options);
  ASSERT_FALSE(small.error) << small.error->to_string();
  EXPECT_FALSE(small.verdict.passed);
  EXPECT_GT(small.summary.fallbacks, 0);
  EXPECT_TRUE(small.shard_failures.empty());

  // The same graph with weights past 1 GiB (a sparse 2 GiB tail): before the overlay change
  // G6 replaced every verdict with ANE_RISK and this passed at 100 %.
  fs::path big = sparse_copy(kLlm + "moe_int4blk.mlpackage", uint64_t{2} << 30, "moe");
  ShardCheck large = check_shard(big.string(), options);
  fs::remove_all(big.parent_path());
  ASSERT_FALSE(large.error) << large.error->to_string();
  EXPECT_FALSE(large.verdict.passed);
  EXPECT_EQ(large.model_verdict, ModelVerdict::kFail);
  ASSERT_EQ(large.shard_failures.size(), 1u);
  EXPECT_NE(large.shard_failures[0].find("G6: weights"), std::string::npos) << large.shard_failures[0];
  EXPECT_NE(residency_summary_line(large).find("G6: weights"), std::string::npos)
      << "the shard-level failure is on the summary line";
  // Never a better verdict than the small shard: every CPU op stays on the CPU.
  EXPECT_EQ(large.summary.fallbacks, small.summary.fallbacks);
  ASSERT_EQ(large.ops.size(), small.ops.size());
  for (size_t i = 0; i < large.ops.size(); ++i) {
    const OpPlacement& a = small.ops[i];
    const OpPlacement& b = large.ops[i];
    EXPECT_EQ(a.rule_id, b.rule_id) << b.outputs[0];
    if (!placement_on_ane(a.placement)) {
      EXPECT_EQ(b.placement, a.placement) << b.outputs[0];
    } else if (a.placement == Placement::kANE || a.overlay_rule == "G5") {
      EXPECT_EQ(b.placement, Placement::kANERisk) << b.outputs[0];
      EXPECT_EQ(b.overlay_rule, "G6") << b.outputs[0];
    }
  }
}

TEST(Verdict, AShardOverTheWeightLimitFailsEvenWithEveryOpOnTheAne) {
  ProgramBuilder b;
  b.input("x", F16, {1, 64, 1, 8});
  b.blob_const("w", F16, {64, 64, 1, 1});
  b.op("conv", {{"y", F16, {1, 64, 1, 8}}}, {{"weight", {"w"}}, {"x", {"x"}}});
  b.output("y");
  ModelFacts facts;
  facts.weight_bytes = (uint64_t{1} << 30) + 1;
  ShardCheckOptions options;
  options.predict.min_graph_macs = 0;
  ShardCheck c = check_program("big.mlpackage", b.program, facts, "", options);
  ASSERT_FALSE(c.error);
  EXPECT_FALSE(c.verdict.passed);
  ASSERT_FALSE(c.verdict.failures.empty());
  EXPECT_NE(c.verdict.failures[0].find("per-shard limit 1073741824 bytes"), std::string::npos);
  EXPECT_EQ(c.ops[1].overlay_rule, "G6");
  EXPECT_EQ(c.ops[1].placement, Placement::kANERisk);
  facts.weight_bytes = uint64_t{1} << 30;  // at the limit: fine
  c = check_program("ok.mlpackage", b.program, facts, "", options);
  EXPECT_TRUE(c.verdict.passed);
  EXPECT_TRUE(c.shard_failures.empty());
  EXPECT_EQ(c.model_verdict, ModelVerdict::kPass);
}

OpPlacement row(Placement p, bool boundary = false) {
  OpPlacement r;
  r.op_class = OpClass::kCompute;
  r.placement = p;
  r.boundary_cast = boundary;
  r.outputs = {"v"};
  return r;
}

TEST(Verdict, ThreeValuedModelVerdictWithItsCounts) {
  ResidencySummary pass = summarize_residency({row(Placement::kANE), row(Placement::kANE)});
  EXPECT_EQ(model_verdict_of(pass, false), ModelVerdict::kPass);
  EXPECT_EQ(model_verdict_of(pass, true), ModelVerdict::kFail);
  ResidencySummary risk = summarize_residency({row(Placement::kANE), row(Placement::kANERisk)});
  EXPECT_EQ(model_verdict_of(risk, false), ModelVerdict::kAtRisk);
  EXPECT_EQ(risk.body_ane, 1);
  EXPECT_EQ(risk.body_at_risk, 1);
  ResidencySummary fail = summarize_residency(
      {row(Placement::kANE), row(Placement::kANERisk), row(Placement::kUnknown), row(Placement::kCPU)});
  EXPECT_EQ(model_verdict_of(fail, false), ModelVerdict::kFail);
  EXPECT_EQ(fail.body_off_ane, 2);
  EXPECT_EQ(model_verdict_of(summarize_residency({}), false), ModelVerdict::kFail);
  EXPECT_STREQ(model_verdict_name(ModelVerdict::kAtRisk), "at risk");
}

TEST(Verdict, BoundaryCastsAreCountedApartFromTheBody) {
  ResidencySummary s = summarize_residency({row(Placement::kANE), row(Placement::kANE),
                                            row(Placement::kANERisk, true),
                                            row(Placement::kANERisk, true)});
  EXPECT_EQ(s.body_ops, 2);
  EXPECT_EQ(s.body_ane, 2);
  EXPECT_EQ(s.body_at_risk, 0);
  EXPECT_EQ(s.boundary_casts, 2);
  EXPECT_EQ(s.boundary_casts_not_ane, 2);
  EXPECT_EQ(model_verdict_of(s, false), ModelVerdict::kAtRisk);  // casts: CPU on M1-class
  // A boundary cast a plan puts on the ANE leaves a clean body at pass.
  s = summarize_residency({row(Placement::kANE), row(Placement::kANE, true)});
  EXPECT_EQ(model_verdict_of(s, false), ModelVerdict::kPass);
}

TEST(Verdict, ResidencyIsANumberWithABand) {
  ResidencySummary s = summarize_residency({row(Placement::kANE), row(Placement::kANERisk),
                                            row(Placement::kANERisk), row(Placement::kCPU)});
  ASSERT_TRUE(s.residency_pct && s.residency_low_pct);
  EXPECT_DOUBLE_EQ(*s.residency_pct, 75.0);
  EXPECT_DOUBLE_EQ(*s.residency_low_pct, 25.0);
  ShardCheck c;
  c.path = "m.mlpackage";
  c.summary = s;
  c.model_verdict = model_verdict_of(s, false);
  std::string line = residency_summary_line(c);
  EXPECT_NE(line.find("band 25.0-75.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("model fail (body: ANE 1, at risk 2, off ANE 1; boundary casts 0 apart, 0 not on ANE)"),
            std::string::npos)
      << line;
}

TEST(Verdict, OpsInsideControlFlowBodiesInheritItsCpuPlacement) {
  ProgramBuilder b;
  b.input("x", F16, {4});
  b.input("p", DType::kBool, {});
  Op& cond = b.op("cond", {{"y", F16, {4}}}, {{"pred", {"p"}}});
  cond.blocks.resize(2);
  Block* then_block = &b.block().ops.back().blocks[0];
  b.blob_const("c", F16, {4}, then_block);
  b.op("add", {{"t", F16, {4}}}, {{"x", {"x"}}, {"y", {"c"}}}, then_block);
  then_block->outputs = {"t"};
  b.op("relu", {{"f", F16, {4}}}, {{"x", {"x"}}}, &b.block().ops.back().blocks[1]);
  b.block().ops.back().blocks[1].outputs = {"f"};
  b.output("y");
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].rule_id, "R15");
  EXPECT_EQ((*rows)[1].rule_id, "R19");  // a const in the body is still compile-time
  EXPECT_EQ((*rows)[2].rule_id, "R15a");
  EXPECT_EQ((*rows)[2].placement, Placement::kCPU);
  EXPECT_EQ((*rows)[2].detail, "inside cond 'y'");
  EXPECT_EQ((*rows)[3].rule_id, "R15a");
  ResidencySummary s = summarize_residency(*rows);
  EXPECT_EQ(s.body_off_ane, 3);
}

}  // namespace
}  // namespace sg
