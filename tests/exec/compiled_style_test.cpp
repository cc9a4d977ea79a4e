// Apple-compiled program forms: a hand-written .mlmodelc in the style of the iOS18 compiler's
// text (tests/data/exec/compiled_style/gen_compiled_style.py): shapes built from rank-0 int32
// values by concat(axis = 0), rank-0 uint16 gather indices into an int16 shape, W8A8
// quantize / dequantize (per tensor int8, per channel uint8) around linear layers whose weights
// are constexpr_blockwise_shift_scale, and a FlexibleShapeInformation attribute. Every value is
// exact by construction, so outputs and the quantized activations must match numpy bit for bit.
#include "shardgate/executor.h"
#include "shardgate/npy.h"
#include "shardgate/program.h"
#include "shardgate/shard.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace sg {
namespace {
using sg::testing::npy_or_fail;

const std::string kStyleDir = std::string(SG_TEST_DATA_DIR) + "/exec/compiled_style/";

Tensor style_npy(const std::string& file) { return npy_or_fail(kStyleDir + file); }

nlohmann::json cases_json() {
  std::ifstream in(kStyleDir + "cases.json");
  return nlohmann::json::parse(in, nullptr, false);
}

std::shared_ptr<Shard> open_style_fixture() {
  auto s = Shard::open(kStyleDir + "compiled_style.mlmodelc");
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? *s : nullptr;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (element_as_double(got, i) != element_as_double(want, i) && ++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "] = " << element_as_double(got, i) << ", numpy "
                    << element_as_double(want, i);
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.numel() << " elements differ";
}

// The fixture really holds the compiled forms this test is about (so a regenerated fixture
// cannot quietly stop exercising them).
TEST(CompiledStyle, FixtureHasTheCompiledForms) {
  auto shard = open_style_fixture();
  ASSERT_NE(shard, nullptr);
  const Function& fn = shard->program().functions.at(0);
  int rank0_concats = 0, uint16_gathers = 0, quantizes = 0, dequantizes = 0, blockwise = 0;
  std::map<std::string, const ValueType*> types;
  for (const Op& op : fn.block.ops) {
    for (const auto& o : op.outputs) types[o.name] = &o.type;
  }
  for (const Op& op : fn.block.ops) {
    const std::string type = normalize_op_type(op.type);
    if (type == "quantize") ++quantizes;
    if (type == "dequantize") ++dequantizes;
    if (type == "constexpr_blockwise_shift_scale") ++blockwise;
    for (const auto& [name, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (!b.is_reference()) continue;
        const ValueType* t = types.count(b.name) ? types[b.name] : nullptr;
        if (!t) continue;
        if (type == "concat" && name == "values" && t->rank_known && t->shape.empty()) ++rank0_concats;
        if (type == "gather" && name == "indices" && t->dtype == DType::kU16 && t->shape.empty()) {
          ++uint16_gathers;
        }
      }
    }
  }
  EXPECT_EQ(rank0_concats, 5);  // (tokens, 8) and (batch, seq, 8)
  EXPECT_EQ(uint16_gathers, 2);
  EXPECT_EQ(quantizes, 2);
  EXPECT_EQ(dequantizes, 2);
  EXPECT_EQ(blockwise, 2);
  ASSERT_FALSE(fn.attributes.empty());
  EXPECT_EQ(fn.attributes[0].first, "FlexibleShapeInformation");
}

TEST(CompiledStyle, MatchesNumpyBitForBit) {
  auto shard = open_style_fixture();
  ASSERT_NE(shard, nullptr);
  const nlohmann::json j = cases_json();
  ASSERT_TRUE(j.is_object() && j["cases"].size() >= 4);
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"].get<std::string>();
    std::map<std::string, Tensor> inputs{{"x", style_npy(c["inputs"]["x"].get<std::string>())}};
    for (bool stream : {true, false}) {
      RunOptions o;
      o.capture = {"x_q", "h_q"};
      o.stream_weights = stream;
      auto r = Executor(shard).run("main", inputs, o);
      ASSERT_TRUE(r.is_ok()) << name << ": " << r.status().to_string();
      expect_same(r->outputs.at("y"), style_npy(c["outputs"]["y"].get<std::string>()), name + " y");
      expect_same(r->captured.at("x_q"), style_npy(c["captures"]["x_q"].get<std::string>()),
                  name + " x_q");
      expect_same(r->captured.at("h_q"), style_npy(c["captures"]["h_q"].get<std::string>()),
                  name + " h_q");
      EXPECT_EQ(r->captured.at("x_q").dtype(), DType::kI8);
      EXPECT_EQ(r->captured.at("h_q").dtype(), DType::kU8);
    }
  }
}

// The function's type accepts any x of shape [?, ?, 8]; its RangeDims ([1, 4], [1, 64], [8, 8])
// say what a device takes. A run given a shape outside them is a shape error naming the input,
// the dimension and the range; the cases' shapes, at the ranges' ends included, run.
TEST(CompiledStyle, InputsOutsideTheDeclaredRangeDimsAreRefused) {
  auto shard = open_style_fixture();
  ASSERT_NE(shard, nullptr);
  struct Case {
    Shape shape;
    std::string needle;  // "" when the shape is within the ranges
  };
  for (const Case& c : {Case{{5, 4, 8}, "dimension 0 is 5, outside the range [1, 4]"},
                        Case{{1, 65, 8}, "dimension 1 is 65, outside the range [1, 64]"},
                        Case{{4, 64, 8}, ""}, Case{{1, 1, 8}, ""}}) {
    auto x = Tensor::zeros(DType::kF16, c.shape);
    ASSERT_TRUE(x.is_ok());
    auto r = Executor(shard).run("main", {{"x", *x}}, RunOptions{});
    if (c.needle.empty()) {
      EXPECT_TRUE(r.is_ok()) << shape_str(c.shape) << ": " << r.status().to_string();
      continue;
    }
    ASSERT_FALSE(r.is_ok()) << shape_str(c.shape);
    EXPECT_EQ(r.status().code(), ErrorCode::kShape);
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().message().find("input 'x'"), std::string::npos) << r.status().to_string();
  }
}

}  // namespace
}  // namespace sg
