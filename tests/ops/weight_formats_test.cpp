// The weight-format table (runtime/ops/weight_formats.def): every row names a compile-time op
// of ops.def under a unique name, every compile-time op has a row for each of its forms, and
// each committed constexpr package, fixture and corpus model is classified as the format it
// holds (read from the declared types only, nothing decoded). A row whose predicate is wrong,
// or a form that falls through to a neighbouring row, changes a name below.
#include "ops/weight_formats.h"
#include "shardgate/ops.h"
#include "shardgate/shard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace sg {
namespace {

const std::string kData = SG_TEST_DATA_DIR;

// The format of the value `value` of function main of the shard at `path`.
std::string format_of(const std::string& path, const std::string& value) {
  auto shard = Shard::open(path);
  if (!shard.is_ok()) return "(" + shard.status().to_string() + ")";
  const Function& fn = *(*shard)->program().function("main");
  for (const Op& op : fn.block.ops) {
    for (const NamedType& out : op.outputs) {
      if (out.name != value) continue;
      const WeightFormat* f = find_weight_format(ParamTypes(fn, op));
      return f == nullptr ? "(none)" : f->name;
    }
  }
  return "(no value " + value + ")";
}

TEST(WeightFormats, RowsNameCompileTimeOpsUniquely) {
  std::set<std::string> names, ops;
  for (const WeightFormat& f : weight_formats()) {
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate format " << f.name;
    const OpInfo* op = find_op(f.op);
    ASSERT_NE(op, nullptr) << f.name << ": op " << f.op << " is not in ops.def";
    EXPECT_EQ(op->op_class, OpClass::kCompileTime) << f.name;
    ops.insert(f.op);
    // A format read in place has nothing to decode; a format with codes can be range-decoded.
    if (f.cost == WeightCost::kView) {
      EXPECT_FALSE(f.can_stream()) << f.name;
    }
    if (f.codes != nullptr) {
      EXPECT_TRUE(f.can_stream()) << f.name;
    }
  }
  for (const OpInfo& op : all_ops()) {
    if (op.op_class == OpClass::kCompileTime) {
      EXPECT_TRUE(ops.count(std::string(op.name))) << op.name;
    }
  }
}

TEST(WeightFormats, ConstexprPackagesAreClassified) {
  // tests/data/constexpr/<case>.mlpackage: the decoded value is "w".
  const std::map<std::string, std::string> want = {
      {"affine_int8_ios16_axis1", "int8_affine_per_channel"},
      {"affine_int8_ios16_per_tensor", "int8_affine_per_tensor"},
      {"bss_fp16_data_offset", "float_shift_scale"},
      {"bss_int4_block", "int4_per_block"},
      {"bss_int4_block_offset", "int4_per_block"},
      {"bss_int8_block_offset", "int8_per_block"},
      {"bss_int8_per_channel", "int8_per_channel"},
      {"bss_uint4_offset", "int4_per_block"},
      {"bss_uint8_fp32_scale", "int8_per_block"},
      {"cast_fp16_to_fp32", "fp16_cast"},
      {"const_fp16", "fp16_dense"},
      {"lut_to_sparse_chain", "sparse"},
      {"lut_to_sparse_vector_chain", "sparse"},
      {"lut_uint1_axis0", "lut_grouped"},
      {"lut_uint2_axis1", "lut_grouped"},
      {"lut_uint3_axis0", "lut_grouped"},
      {"lut_uint4_conv", "lut_grouped"},
      {"lut_uint4_int8", "lut_grouped"},
      {"lut_uint6_axis1", "lut_grouped"},
      {"lut_uint8_fp32", "lut_grouped"},
      {"lut_vector_axis0", "lut_vector"},
      {"lut_vector_axis_last", "lut_vector"},
      {"quantized_lut_chain", "lut_grouped"},
      {"sparse_blockwise_chain", "sparse"},
      {"sparse_fp16", "sparse"},
  };
  for (const auto& [name, format] : want) {
    EXPECT_EQ(format_of(kData + "/constexpr/" + name + ".mlpackage", "w"), format) << name;
  }
}

// The first compile-time value a conv / linear reads as its weight.
std::string weight_value(const std::string& path) {
  auto shard = Shard::open(path);
  if (!shard.is_ok()) return "";
  for (const Op& op : (*shard)->program().function("main")->block.ops) {
    if (op.type != "conv" && op.type != "linear") continue;
    const Argument* w = op.input("weight");
    if (w != nullptr && w->bindings.size() == 1 && w->bindings[0].is_reference()) return w->bindings[0].name;
  }
  return "";
}

TEST(WeightFormats, FixturesAndCorpusAreClassified) {
  const std::map<std::string, std::string> want = {
      {"fixtures/conv_encoder/fp16.mlpackage", "fp16_dense"},
      {"fixtures/conv_encoder/int8.mlpackage", "int8_per_tensor"},
      {"fixtures/conv_encoder/int8pc.mlpackage", "int8_per_channel"},
      {"fixtures/llm/moe_int8.mlpackage", "int8_per_tensor"},
      {"fixtures/llm/moe_lut4.mlpackage", "lut_grouped"},
      {"fixtures/llm/moe_int4blk.mlpackage", "int4_per_block"},
      {"corpus/silero-vad/unified_int8.mlpackage", "int8_affine_per_channel"},
      {"corpus/silero-vad/unified_palette_4bit.mlpackage", "lut_packed"},
  };
  for (const auto& [rel, format] : want) {
    const std::string path = kData + "/" + rel;
    const std::string value = weight_value(path);
    ASSERT_FALSE(value.empty()) << rel;
    EXPECT_EQ(format_of(path, value), format) << rel << " (" << value << ")";
  }
}

// Every row of the table is the format of some compile-time value in a committed model (the
// constexpr decoder cases, the fixtures, the corpus), each of which has a numpy oracle: a row
// added without a case fails here.
TEST(WeightFormats, EveryRowIsExercisedByACommittedModel) {
  std::vector<std::string> models;
  for (const char* dir : {"/constexpr", "/fixtures/llm", "/fixtures/conv_encoder", "/corpus/silero-vad",
                          "/exec/compiled_style"}) {
    for (const auto& e : std::filesystem::directory_iterator(kData + dir)) {
      const std::string ext = e.path().extension().string();
      if (ext == ".mlpackage" || ext == ".mlmodelc") models.push_back(e.path().string());
    }
  }
  std::map<std::string, std::string> seen;  // format -> first model holding it
  for (const std::string& path : models) {
    auto shard = Shard::open(path);
    ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
    for (const Function& fn : (*shard)->program().functions) {
      for (const Op& op : fn.block.ops) {
        if (!op.is_compile_time()) continue;
        if (const WeightFormat* f = find_weight_format(ParamTypes(fn, op))) seen.emplace(f->name, path);
      }
    }
  }
  for (const WeightFormat& f : weight_formats()) {
    EXPECT_TRUE(seen.count(f.name)) << "format " << f.name << " (" << f.op
                                    << ") is held by no committed model: add a numpy case";
  }
}

}  // namespace
}  // namespace sg
