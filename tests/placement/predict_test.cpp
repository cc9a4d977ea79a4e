// The walk (identities, nested blocks, first-output types) and the residency arithmetic.
#include "placement/program_builder.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

namespace sg {
namespace {

using test::ProgramBuilder;

using test::F16;

TEST(Predict, RowsCarryIdentityTypeClassAndRule) {
  ProgramBuilder b("ios18");
  b.input("x", F16, {1, 64, 1, 8});
  b.blob_const("w", F16, {64, 64, 1, 1});
  b.op("conv", {{"y", F16, {1, 64, 1, 8}}}, {{"weight", {"w"}}, {"x", {"x"}}});
  b.op("ios18.relu", {{"z", F16, {1, 64, 1, 8}}}, {{"x", {"y"}}});
  b.output("z");
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  ASSERT_EQ(rows->size(), 3u);
  const OpPlacement& w = (*rows)[0];
  EXPECT_EQ(w.function, "main");
  EXPECT_EQ(w.block_path, (std::vector<int64_t>{-1}));
  EXPECT_EQ(w.index, 0);
  EXPECT_EQ(w.op_class, OpClass::kCompileTime);
  EXPECT_EQ(w.placement, Placement::kNoDevice);
  EXPECT_TRUE(w.preferred.empty());
  EXPECT_TRUE(w.supported.empty());
  const OpPlacement& conv = (*rows)[1];
  EXPECT_EQ(conv.type, "conv");
  EXPECT_EQ(conv.index, 1);
  EXPECT_EQ(conv.dtype, "fp16");
  EXPECT_EQ(conv.shape, (Shape{1, 64, 1, 8}));
  EXPECT_EQ(conv.rule_id, "R1");
  EXPECT_EQ(conv.preferred, "ane");
  EXPECT_EQ(conv.supported, (std::vector<std::string>{"cpu", "ane"}));
  EXPECT_EQ(conv.source, PlacementSource::kPredicted);
  // The opset prefix is stripped before classification.
  EXPECT_EQ((*rows)[2].type, "relu");
  EXPECT_EQ((*rows)[2].rule_id, "R6");
}

TEST(Predict, NestedBlocksAreWalkedWithTheirPath) {
  ProgramBuilder b;
  b.input("x", F16, {4});
  b.input("p", DType::kBool, {});
  Op& cond = b.op("cond", {{"y", F16, {4}}}, {{"pred", {"p"}}});
  cond.blocks.resize(2);
  Block* then_block = &b.block().ops.back().blocks[0];
  Block* else_block = &b.block().ops.back().blocks[1];
  b.op("relu", {{"t", F16, {4}}}, {{"x", {"x"}}}, then_block);
  b.op("sigmoid", {{"f0", F16, {4}}}, {{"x", {"x"}}}, else_block);
  b.op("tanh", {{"f", F16, {4}}}, {{"x", {"f0"}}}, else_block);
  then_block->outputs = {"t"};
  else_block->outputs = {"f"};
  b.output("y");
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].rule_id, "R15");
  EXPECT_EQ((*rows)[1].outputs[0], "t");
  EXPECT_EQ((*rows)[1].block_path, (std::vector<int64_t>{-1, 0}));
  EXPECT_EQ((*rows)[2].block_path, (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ((*rows)[3].block_path, (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ((*rows)[3].index, 1);
  EXPECT_EQ(block_path_str((*rows)[3].block_path), "-1.1");
}

TEST(Predict, OpsWithoutOutputsTakeTheirDevicesFromThePlanByOrder) {
  // write_state returns nothing: it keeps its function/block/index identity, and a plan joins
  // it by its order among the output-less ops of its block (dump_compute_plan.py lists it so).
  // Before, such ops kept their prediction under a plan: a dump placing write_state on the CPU
  // still passed the gate with the op shown on the ANE.
  ProgramBuilder b;
  ValueType st;
  st.kind = ValueType::Kind::kState;
  st.members.push_back(test::tensor_type(F16, {1, 64}));
  b.fn().inputs.push_back(NamedType{"cache", st});
  b.input("x", F16, {1, 64});
  b.op("write_state", {}, {{"data", {"x"}}, {"input", {"cache"}}});
  b.op("relu", {{"y", F16, {1, 64}}}, {{"x", {"x"}}});
  auto predicted = predict_placement(b.program, {});
  ASSERT_TRUE(predicted.is_ok()) << predicted.status().to_string();
  ASSERT_EQ(predicted->size(), 2u);
  EXPECT_TRUE((*predicted)[0].outputs.empty());
  EXPECT_EQ((*predicted)[0].index, 0);
  EXPECT_EQ((*predicted)[0].rule_id, "R25");

  ComputePlanDump plan;
  plan.form = ComputePlanDump::Form::kShardgate;
  plan.filename = "p.json";
  PlanOp relu;
  relu.function = "main";
  relu.block_path = {-1};
  relu.output = "y";
  relu.operator_type = "relu";
  relu.preferred = "ane";
  PlanOp write = relu;
  write.output.clear();
  write.operator_type = "write_state";
  write.preferred = "cpu";
  plan.ops = {write, relu};
  std::vector<OpPlacement> rows = *predicted;
  auto failures = apply_compute_plan(rows, plan, "");
  ASSERT_TRUE(failures.is_ok()) << failures.status().to_string();
  EXPECT_TRUE(failures->empty());
  EXPECT_EQ(rows[0].source, PlacementSource::kPlan);
  EXPECT_EQ(rows[0].placement, Placement::kCPU);
  EXPECT_EQ(rows[1].source, PlacementSource::kPlan);
  EXPECT_FALSE(evaluate_residency_gate(rows, summarize_residency(rows), *failures, {},
                                       ResidencyThreshold{100.0, "t", ""}, false)
                   .passed);

  // A null device there is a failure naming the block, like any compute op's.
  plan.ops[0].preferred.reset();
  rows = *predicted;
  failures = apply_compute_plan(rows, plan, "");
  ASSERT_TRUE(failures.is_ok()) << failures.status().to_string();
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_NE((*failures)[0].find("main/-1/(no output) (write_state)"), std::string::npos)
      << (*failures)[0];

  // Our dump lists every op: one leaving write_state out, or naming another op there, does not
  // describe this program.
  plan.ops = {relu};
  rows = *predicted;
  failures = apply_compute_plan(rows, plan, "");
  ASSERT_FALSE(failures.is_ok());
  EXPECT_NE(failures.status().message().find("op without outputs #1 (write_state) of block "
                                             "main/-1 of the shard is missing from the dump"),
            std::string::npos) << failures.status().message();
  write.operator_type = "coreml_update_state";
  plan.ops = {write, relu};
  rows = *predicted;
  failures = apply_compute_plan(rows, plan, "");
  ASSERT_FALSE(failures.is_ok());
  EXPECT_NE(failures.status().message().find("is 'coreml_update_state' in the dump but "
                                             "'write_state' in the shard"),
            std::string::npos) << failures.status().message();

  // Apple's form cannot name an op without outputs: it kept its prediction, and a plan-based
  // verdict passed with that op never measured. It now has no device and fails, named.
  plan.form = ComputePlanDump::Form::kModelRunner;
  plan.ops = {relu};
  rows = *predicted;
  failures = apply_compute_plan(rows, plan, "");
  ASSERT_TRUE(failures.is_ok()) << failures.status().to_string();
  EXPECT_EQ(rows[0].source, PlacementSource::kPlan);
  EXPECT_EQ(rows[0].placement, Placement::kUnknown);
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_NE((*failures)[0].find("main/-1/(no output) (write_state): an op without outputs, which "
                                "Apple's form of the plan cannot name"), std::string::npos)
      << (*failures)[0];
  EXPECT_EQ(rows[1].source, PlacementSource::kPlan);
}

// G3 reads RangeDims from model.mil's FlexibleShapeInformation as well as from metadata.json:
// compiled_style.mlmodelc has the attribute ("x": [[1, 4], [1, 64], [8, 8]]) and no
// metadata.json, and its fp16 body used to be predicted on the ANE (at risk through G5) with
// nothing said about the range-shaped input that keeps such models off the NE (entry 20).
TEST(Predict, RangeDimsDeclaredInTheProgramFireG3) {
  ShardCheck c = check_shard(SG_TEST_DATA_DIR "/exec/compiled_style/compiled_style.mlmodelc",
                             ShardCheckOptions{});
  ASSERT_FALSE(c.error) << c.error->to_string();
  bool saw_relu = false;
  for (const OpPlacement& r : c.ops) {
    if (r.outputs.empty() || r.outputs[0] != "h_relu") continue;
    saw_relu = true;
    EXPECT_EQ(r.rule_id, "G3");
    EXPECT_EQ(r.placement, Placement::kCPU);
    EXPECT_EQ(r.detail, "input 'x' has range-shaped dims");
  }
  EXPECT_TRUE(saw_relu);
  EXPECT_EQ(c.summary.body_ane, 0);
}

TEST(Predict, PerBlockDetailNamesTheWeightAndBlock) {
  ProgramBuilder b;
  b.blob_const("w_q", DType::kI4, {64, 128});
  b.blob_const("w_s", F16, {64, 4});
  b.op("constexpr_blockwise_shift_scale", {{"w", F16, {64, 128}}},
       {{"data", {"w_q"}}, {"scale", {"w_s"}}});
  b.input("x", F16, {1, 128});
  b.op("linear", {{"y", F16, {1, 64}}}, {{"weight", {"w"}}, {"x", {"x"}}});
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  const OpPlacement& linear = rows->back();
  EXPECT_EQ(linear.rule_id, "R22");
  EXPECT_EQ(linear.placement, Placement::kCPU);
  EXPECT_NE(linear.detail.find("'w'"), std::string::npos) << linear.detail;
  EXPECT_NE(linear.detail.find("block 32 on axis 1"), std::string::npos) << linear.detail;
}

TEST(Predict, GraphFactsOnlyFromRuntimeValues) {
  // fp32 consts alone do not make an fp32 program: only runtime values count for G1.
  ProgramBuilder b;
  b.blob_const("c", DType::kF32, {4});
  b.input("x", F16, {4});
  b.op("relu", {{"y", F16, {4}}}, {{"x", {"x"}}});
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->back().rule_id, "R6");
}

OpPlacement row(OpClass c, Placement p, std::optional<double> cost = std::nullopt) {
  OpPlacement r;
  r.op_class = c;
  r.placement = p;
  r.cost = cost;
  r.outputs = {"v"};
  return r;
}

TEST(Residency, CountsComputeOpsOnlyAndRiskAsAne) {
  std::vector<OpPlacement> ops = {
      row(OpClass::kCompileTime, Placement::kNoDevice), row(OpClass::kCompileTime, Placement::kNoDevice),
      row(OpClass::kCompute, Placement::kANE),          row(OpClass::kCompute, Placement::kANERisk),
      row(OpClass::kCompute, Placement::kCPU),          row(OpClass::kCompute, Placement::kGPUOrCPU),
      row(OpClass::kCompute, Placement::kUnknown),
  };
  ResidencySummary s = summarize_residency(ops);
  EXPECT_EQ(s.total_ops, 7);
  EXPECT_EQ(s.compile_time_ops, 2);
  EXPECT_EQ(s.compute_ops, 5);
  EXPECT_EQ(s.on_ane, 2);
  EXPECT_EQ(s.at_risk, 1);
  EXPECT_EQ(s.fallbacks, 2);
  EXPECT_EQ(s.unknown, 1);
  ASSERT_TRUE(s.residency_pct.has_value());
  EXPECT_DOUBLE_EQ(*s.residency_pct, 40.0);
  EXPECT_FALSE(s.cost_weighted_pct.has_value());
}

TEST(Residency, CostWeightedShareUsesPlanCosts) {
  std::vector<OpPlacement> ops = {
      row(OpClass::kCompute, Placement::kANE, 0.6), row(OpClass::kCompute, Placement::kCPU, 0.2),
      row(OpClass::kCompute, Placement::kANE, 0.0), row(OpClass::kCompileTime, Placement::kNoDevice),
  };
  ResidencySummary s = summarize_residency(ops);
  EXPECT_EQ(s.costed_ops, 3);
  ASSERT_TRUE(s.cost_weighted_pct.has_value());
  EXPECT_DOUBLE_EQ(*s.cost_weighted_pct, 75.0);
  EXPECT_NEAR(*s.residency_pct, 200.0 / 3.0, 1e-12);
}

TEST(Residency, NoComputeOpMeansNoResidency) {
  ResidencySummary s = summarize_residency({row(OpClass::kCompileTime, Placement::kNoDevice)});
  EXPECT_EQ(s.compute_ops, 0);
  EXPECT_FALSE(s.residency_pct.has_value());
}

}  // namespace
}  // namespace sg
