// Every rule of rules.def fires on at least one constructed program, on the op it describes,
// and the boundaries that separate neighbouring rules hold.
#include "placement/program_builder.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

namespace sg {
namespace {

using test::In;
using test::Out;
using test::ProgramBuilder;

struct Case {
  std::string rule;    // expected rule id (deciding rule, or an overlay)
  std::string target;  // first output of the op under test
  std::function<void(ProgramBuilder&, ModelInfo&, ModelFacts&)> build;
  // Facts the rendered reason + detail must name on this case (sizes, axes, granularity).
  std::vector<std::string> facts = {};
};

using test::F16;
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
       }, {"weights 2147483648 bytes > limit 1073741824 bytes"}},
      {"G5", "y", [](auto& b, auto&, auto&) {
         b.input("a", F16, {1, 8, 64});
         b.input("k", F16, {1, 64, 8});
         b.op("matmul", {{"y", F16, {1, 8, 8}}}, {{"x", {"a"}}, {"y", {"k"}}});
       }, {"does 4096 multiply-accumulates < 134217728"}},
      {"G5b", "y", [](auto& b, auto&, auto&) {
         // A matmul whose rows are a dynamic dim: its work is unknown, not 0.
         b.input("a", F16, {1, -1, 64});
         b.input("k", F16, {1, 64, 8});
         b.op("matmul", {{"y", F16, {1, -1, 8}}}, {{"x", {"a"}}, {"y", {"k"}}});
       }, {"1 conv / matmul / attention op(s) of unknown size, 0 multiply-accumulates known < 134217728"}},
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
      {"R15a", "t", [](auto& b, auto&, auto&) {
         b.input("x", F16, {4});
         b.input("p", DType::kBool, {});
         Op& cond = b.op("cond", {{"y", F16, {4}}}, {{"pred", {"p"}}});
         cond.blocks.resize(2);
         b.op("relu", {{"t", F16, {4}}}, {{"x", {"x"}}}, &b.block().ops.back().blocks[0]);
         b.block().ops.back().blocks[0].outputs = {"t"};
         b.op("sigmoid", {{"f", F16, {4}}}, {{"x", {"x"}}}, &b.block().ops.back().blocks[1]);
         b.block().ops.back().blocks[1].outputs = {"f"};
       }, {"inside cond 'y'"}},
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
       }, {"'cache' last dim 64 is a multiple of 32"}},
      // write_state writes the whole state (here 2M elements, the #2553 cache): R25's reason
      // used to call every update "no larger than SEQ 32", false of this one.
      {"R25", "", [](auto& b, auto&, auto&) {
         ValueType st;
         st.kind = ValueType::Kind::kState;
         st.members.push_back(test::tensor_type(F16, {1, 16, 1024, 128}));
         b.fn().inputs.push_back(NamedType{"cache", st});
         b.input("x", F16, {1, 16, 1024, 128});
         b.op("write_state", {}, {{"data", {"x"}}, {"input", {"cache"}}});
       }, {"a write of the whole state", "'cache' last dim 128 is a multiple of 32"}},
      {"R25b", "y", [](auto& b, auto&, auto&) {
         ValueType st;
         st.kind = ValueType::Kind::kState;
         st.members.push_back(test::tensor_type(F16, {1, 16, 1024, 128}));
         b.fn().inputs.push_back(NamedType{"cache", st});
         b.input("k", F16, {1, 16, 128, 128});  // SEQ 128: 262144 elements
         b.op("read_state", {{"c", F16, {1, 16, 1024, 128}}}, {{"input", {"cache"}}});
         b.op("slice_update", {{"y", F16, {1, 16, 1024, 128}}}, {{"update", {"k"}}, {"x", {"c"}}});
       }, {"update 'k' has 262144 elements > 65536", "SEQ 32"}},
      {"R25a", "y", [](auto& b, auto&, auto&) {
         ValueType st;
         st.kind = ValueType::Kind::kState;
         st.members.push_back(test::tensor_type(F16, {1, 270}));
         b.fn().inputs.push_back(NamedType{"cache", st});
         b.op("read_state", {{"y", F16, {1, 270}}}, {{"input", {"cache"}}});
       }, {"'cache' last dim 270 is not a multiple of 32"}},
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
      {"R11c", "e", [](auto& b, auto&, auto&) {
         b.input("x", F16, {16, 64});
         b.input("idx", I32, {2});
         b.op("gather", {{"e", F16, {2, 64}}}, {{"indices", {"idx"}}, {"x", {"x"}}});
       }, {"indices 'idx' computed at runtime"}},
      {"R11b", "e", [](auto& b, auto&, auto&) {
         b.input("x", F16, {16, 64});
         b.int_const("idx", {0, 2});
         b.op("gather_along_axis", {{"e", F16, {2, 64}}}, {{"indices", {"idx"}}, {"x", {"x"}}});
       }},
      {"R22", "y", [](auto& b, auto&, auto&) {
         blockwise(b, "w_q", {64, 2});  // block 32 on axis 1
         weight_consumer(b, "linear");
       }, {"block 32 on axis 1"}},
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
       }, {"(per-channel)"}},
      {"R22a", "y", [](auto& b, auto&, auto&) {
         blockwise(b, "w_q", {1, 1});  // one scale for the tensor: named per-tensor, not per-channel
         weight_consumer(b, "linear");
       }, {"(per-tensor)"}},
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
       }, {"'i' is int32"}},
      {"R7a", "i", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 64});
         b.op("reduce_argmax", {{"i", I32, {1}}}, {{"x", {"x"}}});
       }},
      {"R18c", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "non_zero", {1, 8}); }},
      {"R18b", "m", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 64});
         b.input("z", F16, {1, 64});
         b.op("greater", {{"m", DType::kBool, {1, 64}}}, {{"x", {"x"}}, {"y", {"z"}}});
       }, {"'m' is bool"}},
      {"R18d", "y", [](auto& b, auto&, auto&) {
         b.input("x", DType::kI8, {1, 64});
         b.op("add", {{"y", DType::kI8, {1, 64}}}, {{"x", {"x"}}, {"y", {"x"}}});
       }, {"'x' is int8"}},
      {"R1b", "y", [](auto& b, auto&, auto&) {
         b.blob_const("w", F16, {64, 64, 2, 2});
         b.input("x", F16, {1, 64, 4, 4});
         b.op("conv_transpose", {{"y", F16, {1, 64, 8, 8}}}, {{"weight", {"w"}}, {"x", {"x"}}});
       }},
      {"R1c", "y", [](auto& b, auto&, auto&) {
         b.blob_const("w", DType::kU8, {64, 64, 1, 1});
         b.input("x", F16, {1, 64, 4, 4});
         b.op("conv_quantized", {{"y", F16, {1, 64, 4, 4}}}, {{"weight", {"w"}}, {"x", {"x"}}});
       }},
      {"R3a", "y", [](auto& b, auto&, auto&) {
         b.input("q", F16, {1, 8, 16, 64});
         b.op("scaled_dot_product_attention", {{"y", F16, {1, 8, 16, 64}}},
              {{"key", {"q"}}, {"query", {"q"}}, {"value", {"q"}}});
       }, {"largest of Q/K/V has 8192 elements < 2097152"}},
      {"R4b", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "instance_norm", {1, 8, 4, 4}); }},
      {"R6a", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 16, 8, 8});
         b.input("g", F16, {1, 16, 1, 1});
         b.op("mul", {{"y", F16, {1, 16, 8, 8}}}, {{"x", {"x"}}, {"y", {"g"}}});
       }, {"runtime 'g' [1, 16, 1, 1] broadcast over 'x' [1, 16, 8, 8]"}},
      {"R6c", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "erf", {1, 64}); }},
      {"R6d", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 64});
         b.op("cast", {{"y", DType::kI8, {1, 64}}}, {{"x", {"x"}}});
       }},
      {"R7b", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "reduce_log_sum_exp", {1, 64}); }},
      {"R7c", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "reduce_prod", {1, 64}); }},
      {"R8", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8, 28, 28});
         b.int_const("k", {28, 28});
         b.int_const("s", {1, 1});
         b.op("avg_pool", {{"y", F16, {1, 8, 1, 1}}},
              {{"kernel_sizes", {"k"}}, {"strides", {"s"}}, {"x", {"x"}}});
       }, {"kernel 28 > 13"}},
      {"R8a", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8, 16, 16});
         b.int_const("k", {4, 4});
         b.int_const("s", {4, 4});
         b.op("max_pool", {{"y", F16, {1, 8, 4, 4}}},
              {{"kernel_sizes", {"k"}}, {"strides", {"s"}}, {"x", {"x"}}});
       }, {"stride 4 > 2"}},
      {"R8b", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8, 16, 16});
         b.int_const("k", {2, 2});
         b.int_const("s", {2, 2});
         b.op("max_pool", {{"y", F16, {1, 8, 8, 8}}},
              {{"kernel_sizes", {"k"}}, {"strides", {"s"}}, {"x", {"x"}}});
       }, {"kernel 2, stride 2"}},
      {"R9", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8, 2, 2});
         b.op("upsample_nearest_neighbor", {{"y", F16, {1, 8, 56, 56}}}, {{"x", {"x"}}});
       }, {"scale 28x28"}},
      {"R9b", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8, 4, 4});
         b.op("upsample_bilinear", {{"y", F16, {1, 8, 8, 8}}}, {{"x", {"x"}}});
       }, {"scale 2x2"}},
      {"R9a", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "resize_bilinear", {1, 8, 4, 4}); }},
      {"R10a", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "pixel_shuffle", {1, 8, 4, 4}); }},
      {"R24", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 64});
         b.op("quantize", {{"y", DType::kI8, {1, 64}}}, {{"input", {"x"}}});
       }},
      {"U1", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "random_normal", {1, 64}); },
       {"random sampling"}},
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
         b.input("q", F16, {1, 16, 2048, 64});  // 2^21 elements: at the size Vx #437 saw on the NE
         b.op("scaled_dot_product_attention", {{"y", F16, {1, 16, 2048, 64}}},
              {{"key", {"q"}}, {"query", {"q"}}, {"value", {"q"}}});
       }, {"2097152 elements >= 2097152", "2^21"}},
      {"R3b", "y", [](auto& b, auto&, auto&) {
         b.input("q", F16, {1, 16, -1, 64});  // a symbolic sequence length
         b.op("scaled_dot_product_attention", {{"y", F16, {1, 16, -1, 64}}},
              {{"key", {"q"}}, {"query", {"q"}}, {"value", {"q"}}});
       }, {"sizes unknown"}},
      {"R4", "y", [](auto& b, auto&, auto&) {
         b.input("x", F16, {1, 8, 64});
         b.int_const("ax", {-1});
         b.op("layer_norm", {{"y", F16, {1, 8, 64}}}, {{"axes", {"ax"}}, {"x", {"x"}}});
       }, {"rank-3 input, axes [-1]"}},
      {"R5", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "softmax", {1, 64}); }},
      {"R6", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "gelu", {1, 64}); }},
      {"R7", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "reduce_mean", {1, 64}); }},
      {"R10", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "transpose", {4, 64}); }},
      {"DEFAULT", "y", [](auto& b, auto&, auto&) { unary_fp16(b, "my_custom_layer", {1, 64}); }},
  };
}

// The row whose first output is `output`; "" names the first op without outputs (write_state).
const OpPlacement* find_row(const std::vector<OpPlacement>& rows, const std::string& output) {
  for (const OpPlacement& r : rows) {
    if (output.empty() ? r.outputs.empty() : !r.outputs.empty() && r.outputs[0] == output) return &r;
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
    const RuleInfo* rule = find_rule(c.rule);
    ASSERT_NE(rule, nullptr);
    PredictOptions options;
    // The small-graph overlay would raise every tiny case; it is tested on its own case.
    if (c.rule != "G5" && c.rule != "G5b") options.min_graph_macs = 0;
    auto rows = predict_placement(b.program, facts, options);
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    const OpPlacement* row = find_row(*rows, c.target);
    ASSERT_NE(row, nullptr);
    std::string rendered;
    if (rule->level == RuleLevel::kOverlay) {
      EXPECT_EQ(row->overlay_rule, c.rule);
      EXPECT_EQ(row->placement, Placement::kANERisk);
      rendered = std::string(rule->reason) + ": " + row->overlay_detail;
    } else {
      EXPECT_EQ(row->rule_id, c.rule);
      EXPECT_EQ(row->reason, rule->reason);
      EXPECT_TRUE(row->overlay_rule.empty()) << row->overlay_rule;
      EXPECT_EQ(row->predicted, rule->placement);
      rendered = row->reason + ": " + row->detail;
    }
    for (const std::string& fact : c.facts) {
      EXPECT_NE(rendered.find(fact), std::string::npos) << "'" << fact << "' not in: " << rendered;
    }
    // A reason that speaks of fp16 fires on an fp16 op; one naming op types names this one.
    if (std::string(rule->reason).find("fp16 ") != std::string::npos &&
        rule->level == RuleLevel::kOp && c.rule != "R25a") {
      EXPECT_EQ(row->dtype, "fp16") << rendered;
    }
  }
}

// The op rules whose reasons say fp16 (R2, R3, R5, R6, R7) must not fire on an op that reads or
// writes another runtime type: an int8 `add` used to get R6's "fp16 elementwise op ... runs on
// the NE", and a runtime bool mask R6 too. They get R18d (risk) or R18b (unknown) instead.
TEST(RuleReasons, Fp16ReasonsNeverFireOnOtherRuntimeTypes) {
  struct Twin {
    std::string what;
    std::function<void(ProgramBuilder&)> build;
    std::string rule;
  };
  const std::vector<Twin> twins = {
      {"int8 add", [](ProgramBuilder& b) {
         b.input("x", DType::kI8, {1, 64});
         b.op("add", {{"y", DType::kI8, {1, 64}}}, {{"x", {"x"}}, {"y", {"x"}}});
       }, "R18d"},
      {"int16 softmax", [](ProgramBuilder& b) {
         b.input("x", DType::kI16, {1, 64});
         b.op("softmax", {{"y", DType::kI16, {1, 64}}}, {{"x", {"x"}}});
       }, "R18d"},
      {"uint8 reduce_mean", [](ProgramBuilder& b) {
         b.input("x", DType::kU8, {1, 64});
         b.op("reduce_mean", {{"y", DType::kU8, {1}}}, {{"x", {"x"}}});
       }, "R18d"},
      {"int8 matmul", [](ProgramBuilder& b) {
         b.input("x", DType::kI8, {1, 512, 512});
         b.op("matmul", {{"y", DType::kI8, {1, 512, 512}}}, {{"x", {"x"}}, {"y", {"x"}}});
       }, "R18d"},
      {"select on a runtime bool mask", [](ProgramBuilder& b) {
         b.input("x", F16, {1, 64});
         b.input("m", DType::kBool, {1, 64});
         b.op("select", {{"y", F16, {1, 64}}}, {{"a", {"x"}}, {"b", {"x"}}, {"cond", {"m"}}});
       }, "R18b"},
      {"logical_not", [](ProgramBuilder& b) {
         b.input("m", DType::kBool, {1, 64});
         b.op("logical_not", {{"y", DType::kBool, {1, 64}}}, {{"x", {"m"}}});
       }, "R18b"},
  };
  for (const Twin& t : twins) {
    SCOPED_TRACE(t.what);
    ProgramBuilder b;
    t.build(b);
    b.output("y");
    auto rows = predict_placement(b.program, ModelFacts{}, PredictOptions{});
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    const OpPlacement* row = find_row(*rows, "y");
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->rule_id, t.rule) << row->reason;
    EXPECT_EQ(row->reason.find("fp16 "), std::string::npos) << row->reason;
    if (t.rule == "R18b") {
      EXPECT_EQ(row->predicted, Placement::kUnknown);
    }
  }
}

// Reasons that list op types list every op their kind covers (op_kinds.def), so the reason is
// true of each op the rule fires on; and every kind's ops are named somewhere in its reason.
TEST(RuleReasons, ListedOpTypesMatchTheKindTable) {
  const std::map<std::string, std::string> rule_of_kind = {
      {"kElementwise", "R6"}, {"kReduce", "R7"},     {"kDataMovement", "R10"}, {"kOtherNorm", "R4b"},
      {"kIndex", "R18c"},     {"kResample", "R9a"},  {"kRecurrent", "R16"},    {"kSort", "R13"},
      {"kControlFlow", "R15"}, {"kLayerNorm", "R4"}, {"kArgReduce", "R7a"},
  };
  for (const PlacementOpKind& k : placement_op_kinds()) {
    auto it = rule_of_kind.find(std::string(k.kind));
    if (it == rule_of_kind.end()) continue;
    std::string reason(find_rule(it->second)->reason);
    std::string name(k.op);
    // "slice" names slice_by_index and slice_by_size.
    if (name.rfind("slice_by_", 0) == 0) name = "slice";
    EXPECT_NE(reason.find(name), std::string::npos)
        << it->second << " fires on " << k.op << " but its reason does not name it: " << reason;
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
  // DEFAULT closes the graph and op rules; only overlays follow it.
  bool after_default = false;
  for (const RuleInfo& r : all_rules()) {
    if (after_default) {
      EXPECT_EQ(r.level, RuleLevel::kOverlay) << r.id;
    }
    if (r.id == "DEFAULT") after_default = true;
  }
  EXPECT_TRUE(after_default);
  EXPECT_EQ(find_rule("R22")->placement, Placement::kCPU);
  EXPECT_EQ(find_rule("R20")->placement, Placement::kANE);
  EXPECT_EQ(find_rule("R19")->placement, Placement::kNoDevice);
  EXPECT_EQ(find_rule("nope"), nullptr);
}

}  // namespace
}  // namespace sg
