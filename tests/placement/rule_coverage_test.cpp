// Every rule of rules.def fires on at least one constructed program, on the op it describes,
// and the boundaries that separate neighbouring rules hold.
#include "placement/program_builder.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

namespace sg {
namespace {

using test::In;
using test::Out;
using test::ProgramBuilder;

struct Case {
  std::string rule;    // expected rule id
  std::string target;  // first output of the op under test
  std::function<void(ProgramBuilder&, ModelInfo&, ModelFacts&)> build;
};

constexpr DType F16 = DType::kF16;
constexpr DType F32 = DType::kF32;
constexpr DType I32 = DType::kI32;

// An fp16 op y = type(x) on an fp16 input of `shape`.
void unary_fp16(ProgramBuilder& b, const std::string& type, Shape shape) {
  b.input("x", F16, shape);
  b.op(type, {{"y", F16, shape}}, {{"x", {"x"}}});
  b.output("y");
}

// weight w fp16 [64, 64] from a chain, read by `consumer` (linear / conv / matmul).
void weight_consumer(ProgramBuilder& b, const std::string& consumer) {
  b.input("x", F16, {1, 64});
  if (consumer == "conv") {
    b.op("conv", {{"y", F16, {1, 64}}}, {{"weight", {"w"}}, {"x", {"x"}}});
  } else if (consumer == "matmul") {
    b.op("matmul", {{"y", F16, {1, 64}}}, {{"x", {"x"}}, {"y", {"w"}}});
  } else {
    b.op(consumer, {{"y", F16, {1, 64}}}, {{"weight", {"w"}}, {"x", {"x"}}});
  }
  b.output("y");
}

void blockwise(ProgramBuilder& b, const std::string& data, Shape scale_shape) {
  b.blob_const("w_q", DType::kI4, {64, 64});
  b.blob_const("w_scale", F16, scale_shape);
  b.op("constexpr_blockwise_shift_scale", {{"w", F16, {64, 64}}},
       {{"data", {data}}, {"scale", {"w_scale"}}});
}

void lut(ProgramBuilder& b, const std::string& out) {
  b.blob_const("w_idx", DType::kU4, {64, 64, 1, 1});
  b.blob_const("w_lut", F16, {64, 1, 16, 1});
  b.op("constexpr_lut_to_dense", {{out, F16, {64, 64}}},
       {{"indices", {"w_idx"}}, {"lut", {"w_lut"}}});
}

std::vector<Case> cases() {
  return {
      {"G1", "y", [](auto& b, auto&, auto&) {
         b.input("x", F32, {1, 8});
         b.op("relu", {{"y", F32, {1, 8}}}, {{"x", {"x"}}});
       }},
      {"G3", "y", [](auto& b, auto& info, auto& facts) {
         unary_fp16(b, "relu", {1, 8});
         FeatureInfo f;
         f.name = "x";
         f.dtype = F16;
         f.flexible = f.range_flexible = true;
         info.inputs.push_back(f);
         facts.info = &info;
       }},
      {"G6", "y", [](auto& b, auto&, auto& facts) {
         unary_fp16(b, "relu", {1, 8});
         facts.weight_bytes = uint64_t{2} << 30;
       }},
      {"G10", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "relu", {1, 1, 1, 1, 2, 8}); }},
      {"G11", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "relu", {1, 16385}); }},
      {"G2a", "x16", [](auto& b, auto&, auto&) {
         b.input("x", F32, {1, 8});
         b.op("cast", {{"x16", F16, {1, 8}}}, {{"x", {"x"}}});
         b.op("relu", {{"y", F16, {1, 8}}}, {{"x", {"x16"}}});
         b.output("y");
       }},
      {"G2", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8});
         b.op("cast", {{"x32", F32, {1, 8}}}, {{"x", {"x"}}});
         b.op("relu", {{"y", F32, {1, 8}}}, {{"x", {"x32"}}});
         b.op("cast", {{"z", F16, {1, 8}}}, {{"x", {"y"}}});
         b.output("z");
       }},
      {"G4", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {2, 8});
         b.op("shape", {{"s", I32, {2}}}, {{"x", {"x"}}});
         b.op("reshape", {{"y", F16, {2, 8}}}, {{"shape", {"s"}}, {"x", {"x"}}});
       }},
      {"R19", "c", [](auto& b, auto&, auto&) {
         b.blob_const("c", F16, {4});
         b.input("x", F16, {4});
         b.op("add", {{"y", F16, {4}}}, {{"x", {"x"}}, {"y", {"c"}}});
       }},
      {"R19a", "w", [](auto& b, auto&, auto&) {
         lut(b, "w");
         weight_consumer(b, "conv");
       }},
      {"R15", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {4});
         b.input("p", DType::kBool, {});
         Op& cond = b.op("cond", {{"y", F16, {4}}}, {{"pred", {"p"}}});
         cond.blocks.resize(2);
         b.op("relu", {{"t", F16, {4}}}, {{"x", {"x"}}}, &b.block().ops.back().blocks[0]);
         b.block().ops.back().blocks[0].outputs = {"t"};
         b.op("sigmoid", {{"f", F16, {4}}}, {{"x", {"x"}}}, &b.block().ops.back().blocks[1]);
         b.block().ops.back().blocks[1].outputs = {"f"};
       }},
      {"R16", "h", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 1, 8});
         b.blob_const("wi", F16, {32, 8});
         b.op("lstm", {{"h", F16, {1, 1, 8}}, {"hn", F16, {1, 8}}, {"cn", F16, {1, 8}}},
              {{"weight_ih", {"wi"}}, {"x", {"x"}}});
       }},
      {"R12", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {8, 4});
         b.input("u", F16, {2, 4});
         b.int_const("idx", {1, 3});
         b.op("scatter", {{"y", F16, {8, 4}}},
              {{"data", {"x"}}, {"indices", {"idx"}}, {"updates", {"u"}}});
       }},
      {"R13", "v", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 64});
         b.op("topk", {{"v", F16, {1, 4}}, {"i", I32, {1, 4}}}, {{"x", {"x"}}});
       }},
      {"R14", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "band_part", {8, 8}); }},
      {"R25", "y", [](auto& b, auto&, auto&) {
         ValueType st;
         st.kind = ValueType::Kind::kState;
         st.members.push_back(test::tensor_type(F16, {1, 64}));
         b.fn().inputs.push_back(NamedType{"cache", st});
         b.op("read_state", {{"y", F16, {1, 64}}}, {{"input", {"cache"}}});
       }},
      {"R11a", "e", [](auto& b, auto&, auto&) {
         b.blob_const("table", F16, {40000, 64});
         b.input("ids", I32, {1, 4});
         b.op("gather", {{"e", F16, {1, 4, 64}}}, {{"indices", {"ids"}}, {"x", {"table"}}});
       }},
      {"R11", "e", [](auto& b, auto&, auto&) {
         b.blob_const("table", F16, {32768, 64});  // exactly at the bound: not R11a
         b.input("ids", I32, {1, 4});
         b.op("gather", {{"e", F16, {1, 4, 64}}}, {{"indices", {"ids"}}, {"x", {"table"}}});
       }},
      {"R11b", "e", [](auto& b, auto&, auto&) {
         b.input("x", F16, {16, 64});
         b.int_const("idx", {0, 2});
         b.op("gather_along_axis", {{"e", F16, {2, 64}}}, {{"indices", {"idx"}}, {"x", {"x"}}});
       }},
      {"R22", "y", [](auto& b, auto&, auto&) {
         blockwise(b, "w_q", {64, 2});  // block 32 on axis 1
         weight_consumer(b, "linear");
       }},
      {"R20a", "y", [](auto& b, auto&, auto&) {
         lut(b, "w_l");
         b.blob_const("w_scale", F16, {64, 1});
         b.op("constexpr_blockwise_shift_scale", {{"w", F16, {64, 64}}},
              {{"data", {"w_l"}}, {"scale", {"w_scale"}}});
         weight_consumer(b, "linear");
       }},
      {"R21", "y", [](auto& b, auto&, auto&) {
         Op& o = b.op("constexpr_affine_dequantize", {{"w", F16, {64, 64}}});
         Value q;
         q.type = test::tensor_type(DType::kI8, {64, 64});
         q.blob = BlobRef{"@model_path/weights/weight.bin", 64};
         o.attributes.emplace_back("quantized_data", std::move(q));
         weight_consumer(b, "conv");
       }},
      {"R22a", "y", [](auto& b, auto&, auto&) {
         blockwise(b, "w_q", {64, 1});  // per output channel
         weight_consumer(b, "conv");
       }},
      {"R20", "y", [](auto& b, auto&, auto&) {
         lut(b, "w");
         weight_consumer(b, "conv");
       }},
      {"R23", "y", [](auto& b, auto&, auto&) {
         b.blob_const("w_mask", DType::kU1, {64, 64});
         b.blob_const("w_nz", F16, {512});
         b.op("constexpr_sparse_to_dense", {{"w", F16, {64, 64}}},
              {{"mask", {"w_mask"}}, {"nonzero_data", {"w_nz"}}});
         weight_consumer(b, "matmul");
       }},
      {"R18", "i", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8});
         b.op("cast", {{"i", I32, {1, 8}}}, {{"x", {"x"}}});
       }},
      {"R1", "y", [](auto& b, auto&, auto&) {
         b.blob_const("w", F16, {64, 64, 1, 1});
         b.input("x", F16, {1, 64, 1, 8});
         b.op("conv", {{"y", F16, {1, 64, 1, 8}}}, {{"weight", {"w"}}, {"x", {"x"}}});
       }},
      {"R2", "y", [](auto& b, auto&, auto&) {
         b.input("a", F16, {1, 8, 64});
         b.input("k", F16, {1, 64, 8});
         b.op("matmul", {{"y", F16, {1, 8, 8}}}, {{"x", {"a"}}, {"y", {"k"}}});
       }},
      {"R3", "y", [](auto& b, auto&, auto&) {
         b.input("q", F16, {1, 8, 16, 64});
         b.op("scaled_dot_product_attention", {{"y", F16, {1, 8, 16, 64}}},
              {{"key", {"q"}}, {"query", {"q"}}, {"value", {"q"}}});
       }},
      {"R4", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "layer_norm", {1, 64, 1, 8}); }},
      {"R5", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "softmax", {1, 64}); }},
      {"R6", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "gelu", {1, 64}); }},
      {"R7", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "reduce_mean", {1, 64}); }},
      {"R10", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "transpose", {4, 64}); }},
      {"DEFAULT", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "my_custom_layer", {1, 64}); }},
  };
}

const OpPlacement* find_row(const std::vector<OpPlacement>& rows, const std::string& output) {
  for (const OpPlacement& r : rows) {
    if (!r.outputs.empty() && r.outputs[0] == output) return &r;
  }
  return nullptr;
}

TEST(RuleCoverage, EachCaseFiresItsRule) {
  for (const Case& c : cases()) {
    SCOPED_TRACE("rule " + c.rule);
    ProgramBuilder b;
    ModelInfo info;
    ModelFacts facts;
    c.build(b, info, facts);
    auto rows = predict_placement(b.program, facts);
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    const OpPlacement* row = find_row(*rows, c.target);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->rule_id, c.rule);
    const RuleInfo* rule = find_rule(c.rule);
    ASSERT_NE(rule, nullptr);
    EXPECT_EQ(row->predicted, rule->placement);
    EXPECT_EQ(row->reason, rule->reason);
  }
}

TEST(RuleCoverage, EveryRuleInTheTableHasACase) {
  std::set<std::string> covered;
  for (const Case& c : cases()) covered.insert(c.rule);
  for (const RuleInfo& r : all_rules()) {
    EXPECT_TRUE(covered.count(std::string(r.id))) << "rule " << r.id << " never fires in a test";
  }
}

TEST(RuleTable, GraphRulesComeFirstAndIdsAreUnique) {
  std::set<std::string_view> ids;
  bool seen_op = false;
  for (const RuleInfo& r : all_rules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate rule id " << r.id;
    if (r.level == RuleLevel::kOp) seen_op = true;
    EXPECT_FALSE(r.level == RuleLevel::kGraph && seen_op) << r.id << " after an op rule";
    EXPECT_FALSE(r.source.empty()) << r.id;
    EXPECT_FALSE(r.reason.empty()) << r.id;
  }
  EXPECT_EQ(all_rules().back().id, "DEFAULT");
  EXPECT_EQ(find_rule("R22")->placement, Placement::kCPU);
  EXPECT_EQ(find_rule("R20")->placement, Placement::kANE);
  EXPECT_EQ(find_rule("R19")->placement, Placement::kNoDevice);
  EXPECT_EQ(find_rule("nope"), nullptr);
}

}  // namespace
}  // namespace sg
