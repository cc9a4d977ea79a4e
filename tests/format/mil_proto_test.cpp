// Tests of the .mlpackage protobuf reader (runtime/format/mil_proto.cpp, protowire.cpp,
// model_description.cpp).
//
// Expected programs come from Google's protobuf runtime via coremltools' generated classes
// (tests/data/format/proto/gen_proto_fixtures.py writes the dumps), and from the compiler's
// own metadata.json next to each corpus model. Malformed inputs are built here with a tiny
// wire encoder, independent of the reader.
#include "shardgate/io.h"
#include "shardgate/readers.h"
#include "support/program_dump.h"
#include "support/test_paths.h"
#include "support/file_bytes.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace sg {
namespace {
using sg::testing::slurp;

using sg::testing::kSileroDir;
using sg::testing::kSileroModels;
const std::string kFixtures = std::string(SG_TEST_DATA_DIR) + "/format/proto/";

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string package_model(const std::string& name) {
  return kSileroDir + name + ".mlpackage/Data/com.apple.CoreML/model.mlmodel";
}

Result<ProtoModel> parse(const std::string& data, const std::string& filename = "t.mlmodel") {
  return parse_model_proto(bytes_of(data), filename);
}

// --- a minimal protobuf encoder for hand-built inputs ------------------------------------

struct Pb {
  std::string b;

  static void put_varint(std::string& s, uint64_t v) {
    while (v >= 0x80) {
      s += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    s += static_cast<char>(v);
  }
  Pb& tag(uint32_t field, int wire) {
    put_varint(b, (uint64_t{field} << 3) | static_cast<uint64_t>(wire));
    return *this;
  }
  Pb& varint(uint32_t field, uint64_t v) {
    tag(field, 0);
    put_varint(b, v);
    return *this;
  }
  Pb& bytes(uint32_t field, std::string_view payload) {
    tag(field, 2);
    put_varint(b, payload.size());
    b.append(payload);
    return *this;
  }
  Pb& msg(uint32_t field, const Pb& m) { return bytes(field, m.b); }
  Pb& fixed32(uint32_t field, uint32_t v) {
    tag(field, 5);
    b.append(reinterpret_cast<const char*>(&v), 4);
    return *this;
  }
  Pb& fixed64(uint32_t field, uint64_t v) {
    tag(field, 1);
    b.append(reinterpret_cast<const char*>(&v), 8);
    return *this;
  }
};

constexpr int kString = 2, kFp16 = 10, kFp32 = 11, kInt16 = 22, kInt32 = 23;

// ValueType{tensorType{dataType, rank, dimensions}}.
Pb tensor_vt(int dtype, const std::vector<uint64_t>& dims) {
  Pb tt;
  tt.varint(1, static_cast<uint64_t>(dtype));
  if (!dims.empty()) tt.varint(2, dims.size());
  for (uint64_t d : dims) tt.msg(3, Pb().msg(1, Pb().varint(1, d)));
  return Pb().msg(1, tt);
}

// Value{type, immediateValue{tensor{<field>{...}}}}.
Pb immediate(const Pb& vt, uint32_t tensor_field, const Pb& repeated) {
  return Pb().msg(2, vt).msg(3, Pb().msg(1, Pb().msg(tensor_field, repeated)));
}

Pb str_value(const std::string& s) { return immediate(tensor_vt(kString, {}), 4, Pb().bytes(1, s)); }

Pb entry(const std::string& key, const Pb& value) { return Pb().bytes(1, key).msg(2, value); }

Pb named(const std::string& name, const Pb& vt) { return Pb().bytes(1, name).msg(2, vt); }

Pb const_op(const std::string& name, const Pb& out_type, const Pb& val) {
  return Pb()
      .bytes(1, "const")
      .msg(3, named(name, out_type))
      .msg(5, entry("name", str_value(name)))
      .msg(5, entry("val", val));
}

// Model{specificationVersion 7, mlProgram{version 1, functions{main: CoreML6 block of ops}}}.
std::string model_with_ops(const std::vector<Pb>& ops, const std::string& output = "c") {
  Pb block;
  for (const Pb& op : ops) block.msg(3, op);
  block.bytes(2, output);
  Pb fn;
  fn.msg(1, named("x", tensor_vt(kFp32, {1, 4})));
  fn.bytes(2, "CoreML6");
  fn.msg(3, entry("CoreML6", block));
  Pb program;
  program.varint(1, 1).msg(2, entry("main", fn));
  Pb model;
  model.varint(1, 7).msg(502, program);
  return model.b;
}

std::string int32_const_model(const Pb& ints_repeated, uint64_t n) {
  return model_with_ops({const_op("c", tensor_vt(kInt32, {n}),
                                  immediate(tensor_vt(kInt32, {n}), 2, ints_repeated))});
}

std::vector<int32_t> int32_values(const ProtoModel& m) {
  const Value* v = m.program.functions.at(0).block.ops.at(0).attribute("val");
  if (!v || v->tensor.dtype() != DType::kI32) return {};
  const auto* p = v->tensor.data<int32_t>();
  return {p, p + v->tensor.numel()};
}

// Asserts a kFormat error that names the byte offset, and returns its message.
std::string expect_format_error(const Result<ProtoModel>& r) {
  EXPECT_FALSE(r.is_ok());
  if (r.is_ok()) return "";
  EXPECT_EQ(r.status().code(), ErrorCode::kFormat) << r.status().message();
  EXPECT_NE(r.status().message().find("offset "), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().rfind("t.mlmodel: ", 0), 0u) << r.status().message();
  return r.status().message();
}

// --- corpus ------------------------------------------------------------------------------

TEST(MilProto, CorpusMatchesProtobufOracleDump) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    const std::string data = slurp(package_model(name));
    Result<ProtoModel> m = parse(data, "model.mlmodel");
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->program.source, SourceFormat::kProtobuf);
    const std::string got = testing::dump_model_info(m->info) + testing::dump_program(m->program);
    EXPECT_EQ(got, slurp(kFixtures + name + ".dump.txt"));
  }
}

// The compiler's metadata.json histogram names: "Ios16.constexprLutToDense" ->
// constexpr_lut_to_dense, "SliceByIndex" -> slice_by_index, "Lstm" -> lstm.
std::string histogram_name_to_op(std::string key) {
  if (key.rfind("Ios", 0) == 0) {
    const size_t dot = key.find('.');
    if (dot != std::string::npos) key = key.substr(dot + 1);
  }
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    if (c >= 'A' && c <= 'Z') {
      if (i != 0) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

TEST(MilProto, HistogramNameMapping) {
  EXPECT_EQ(histogram_name_to_op("Ios16.constexprAffineDequantize"),
            "constexpr_affine_dequantize");
  EXPECT_EQ(histogram_name_to_op("Ios16.constexprLutToDense"), "constexpr_lut_to_dense");
  EXPECT_EQ(histogram_name_to_op("SliceByIndex"), "slice_by_index");
  EXPECT_EQ(histogram_name_to_op("ExpandDims"), "expand_dims");
  EXPECT_EQ(histogram_name_to_op("Lstm"), "lstm");
  EXPECT_EQ(histogram_name_to_op("Ios16.conv"), "conv");
}

TEST(MilProto, CorpusAgreesWithCompiledMetadata) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    Result<ProtoModel> m = parse(slurp(package_model(name)), "model.mlmodel");
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const auto meta = nlohmann::json::parse(slurp(kSileroDir + name + ".mlmodelc/metadata.json"));
    const auto& obj = meta.at(0);
    EXPECT_EQ(m->info.spec_version, obj.at("specificationVersion").get<int>());
    ASSERT_EQ(m->program.functions.size(), 1u);
    const Function& fn = m->program.functions[0];
    EXPECT_EQ(fn.name, "main");
    // Spec 6 -> CoreML5 -> ios15, spec 7 -> CoreML6 -> ios16 (runtime/format/README.md).
    EXPECT_EQ(fn.opset, m->info.spec_version == 6 ? "ios15" : "ios16");
    EXPECT_EQ(m->program.version, "1");

    std::map<std::string, int> expected, got;
    for (const auto& [key, count] : obj.at("mlProgramOperationTypeHistogram").items()) {
      expected[histogram_name_to_op(key)] += count.get<int>();
    }
    for (const Op& op : fn.block.ops) {
      if (op.type != "const") ++got[op.type];  // the compiler does not count const
    }
    EXPECT_EQ(got, expected);

    // Inputs in proto order, as the compiled description lists them.
    ASSERT_EQ(fn.inputs.size(), obj.at("inputSchema").size());
    for (size_t i = 0; i < fn.inputs.size(); ++i) {
      EXPECT_EQ(fn.inputs[i].name, obj.at("inputSchema")[i].at("name").get<std::string>());
      EXPECT_EQ(m->info.inputs.at(i).name, fn.inputs[i].name);
      EXPECT_EQ(m->info.inputs.at(i).dtype, DType::kF32);
    }
    EXPECT_EQ(m->info.outputs.size(), obj.at("outputSchema").size());

    int lstm = 0;
    for (const Op& op : fn.block.ops) {
      if (op.type != "lstm") continue;
      ++lstm;
      EXPECT_EQ(op.outputs.size(), 3u);
      EXPECT_NE(op.input("x"), nullptr);
    }
    EXPECT_EQ(lstm, 1);
  }
}

TEST(MilProto, PalettizedConstexprKeepsParametersAsAttributes) {
  Result<ProtoModel> m = parse(slurp(package_model("unified_palette_4bit")), "model.mlmodel");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const Op* lut = nullptr;
  for (const Op& op : m->program.functions[0].block.ops) {
    if (op.type == "constexpr_lut_to_dense") {
      lut = &op;
      break;
    }
  }
  ASSERT_NE(lut, nullptr);
  EXPECT_TRUE(lut->inputs.empty());
  ASSERT_EQ(lut->attributes.size(), 4u);
  EXPECT_EQ(lut->attributes[0].first, "indices");  // sorted by name
  EXPECT_EQ(lut->attributes[1].first, "lut");
  EXPECT_EQ(lut->attributes[2].first, "name");
  EXPECT_EQ(lut->attributes[3].first, "shape");
  const Value* indices = lut->attribute("indices");
  ASSERT_TRUE(indices && indices->is_blob());
  EXPECT_EQ(indices->blob->path, "@model_path/weights/weight.bin");
  EXPECT_EQ(indices->blob->offset, 64u);
  EXPECT_EQ(indices->type.dtype, DType::kU8);
  EXPECT_EQ(indices->type.shape, Shape({33024}));
  const Value* lutv = lut->attribute("lut");
  ASSERT_TRUE(lutv && lutv->is_blob());
  EXPECT_EQ(lutv->blob->offset, 33152u);
  const Value* shape = lut->attribute("shape");
  ASSERT_TRUE(shape && !shape->is_blob());
  ASSERT_EQ(shape->tensor.dtype(), DType::kU32);
  ASSERT_EQ(shape->tensor.numel(), 3);
  EXPECT_EQ(shape->tensor.data<uint32_t>()[0], 258u);
  EXPECT_EQ(shape->tensor.data<uint32_t>()[1], 1u);
  EXPECT_EQ(shape->tensor.data<uint32_t>()[2], 256u);
  EXPECT_EQ(lut->name(), "stft_forward_basis_to_fp16_palettized");
  EXPECT_EQ(lut->line, 0);
}

// --- hand-built model with everything the corpus lacks ------------------------------------

TEST(MilProto, FeaturesFixtureMatchesProtobufOracleDump) {
  const std::string data = slurp(kFixtures + "features.mlmodel");
  Result<ProtoModel> m = parse(data, "features.mlmodel");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const std::string got = testing::dump_model_info(m->info) + testing::dump_program(m->program);
  EXPECT_EQ(got, slurp(kFixtures + "features.dump.txt"));

  // A few facts spelled out, so a shared misunderstanding of the dump cannot hide them.
  ASSERT_EQ(m->program.functions.size(), 2u);
  EXPECT_EQ(m->program.functions[0].name, "main");  // sorted, though serialized second
  EXPECT_EQ(m->program.functions[0].opset, "ios18");
  EXPECT_EQ(m->program.functions[1].opset, "ios17");
  const Function& main = m->program.functions[0];
  ASSERT_EQ(main.inputs.size(), 3u);
  EXPECT_EQ(main.inputs[1].name, "kv");  // proto order, not sorted
  EXPECT_EQ(main.inputs[1].type.kind, ValueType::Kind::kState);
  ASSERT_EQ(main.block.ops.at(1).blocks.size(), 2u);
  EXPECT_EQ(main.block.ops[1].blocks[1].ops.at(0).type, "sigmoid");
  EXPECT_TRUE(main.block.ops.at(2).outputs.empty());  // write_state
  const Function& prefill = m->program.functions[1];
  EXPECT_FALSE(prefill.inputs.at(1).type.rank_known);
  const Op& concat = prefill.block.ops.at(19);
  ASSERT_EQ(concat.type, "concat");
  const Argument* values = concat.input("values");
  ASSERT_NE(values, nullptr);
  EXPECT_TRUE(values->is_tuple);
  ASSERT_EQ(values->bindings.size(), 2u);
  EXPECT_EQ(values->bindings[1].name, "c_fp16");
  const Argument* axis = concat.input("axis");
  ASSERT_TRUE(axis && !axis->is_tuple && !axis->bindings[0].is_reference());
  EXPECT_EQ(axis->bindings[0].literal->tensor.data<int32_t>()[0], -1);
  EXPECT_EQ(prefill.block.ops.at(20).type, "custom_attrs");  // "ios17." prefix dropped
  const FeatureInfo& range_input = m->info.inputs.at(1);
  EXPECT_EQ(range_input.function, "prefill");
  EXPECT_TRUE(range_input.flexible && range_input.range_flexible);
  EXPECT_EQ(range_input.shape, Shape({1, kUnknownDim}));
  ASSERT_EQ(m->info.states.size(), 2u);
  EXPECT_TRUE(m->info.states[0].is_state);
  EXPECT_EQ(m->info.default_function, "main");
}

// --- wire-level cases --------------------------------------------------------------------

TEST(MilProto, PackedAndUnpackedRepeatedAgree) {
  Pb packed;
  std::string run;
  for (uint64_t v : {uint64_t{5}, uint64_t{300}, static_cast<uint64_t>(int64_t{-7})}) {
    Pb::put_varint(run, v);
  }
  packed.bytes(1, run);
  Pb unpacked;
  unpacked.varint(1, 5).varint(1, 300).varint(1, static_cast<uint64_t>(int64_t{-7}));
  Pb mixed;  // a packed run followed by a single element: both append
  std::string run2;
  Pb::put_varint(run2, 5);
  Pb::put_varint(run2, 300);
  mixed.bytes(1, run2).varint(1, static_cast<uint64_t>(int64_t{-7}));
  for (const Pb* p : {&packed, &unpacked, &mixed}) {
    Result<ProtoModel> m = parse(int32_const_model(*p, 3));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(int32_values(*m), (std::vector<int32_t>{5, 300, -7}));
  }
  // Unpacked fixed32 floats.
  Pb floats;
  const float a = 1.5f, b = -2.0f;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  floats.fixed32(1, ua).fixed32(1, ub);
  Result<ProtoModel> m = parse(model_with_ops(
      {const_op("c", tensor_vt(kFp32, {2}), immediate(tensor_vt(kFp32, {2}), 1, floats))}));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const Tensor& t = m->program.functions[0].block.ops[0].attribute("val")->tensor;
  ASSERT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.data<float>()[0], 1.5f);
  EXPECT_EQ(t.data<float>()[1], -2.0f);
}

TEST(MilProto, UnknownFieldsOfEveryWireTypeAreSkipped) {
  Pb junk;
  junk.varint(900, 12345).fixed64(901, 7).bytes(902, "\x01\x02\x03").fixed32(903, 9);
  // Unknown fields inside the op, the value, the type and the model.
  Pb op = const_op("c", tensor_vt(kInt32, {2}),
                   immediate(tensor_vt(kInt32, {2}), 2, Pb().varint(1, 1).varint(1, 2)));
  op.b += junk.b;
  Pb val;
  val.b = junk.b;
  val.msg(2, tensor_vt(kInt32, {1}));
  val.b += junk.b;
  val.msg(3, Pb().msg(1, Pb().msg(2, Pb().varint(1, 3))));
  Pb op2 = const_op("d", tensor_vt(kInt32, {1}), val);
  std::string data = model_with_ops({op, op2}, "d");
  data = junk.b + data + junk.b;
  Result<ProtoModel> m = parse(data);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(int32_values(*m), (std::vector<int32_t>{1, 2}));
  ASSERT_EQ(m->program.functions[0].block.ops.size(), 2u);
  EXPECT_EQ(m->program.functions[0].block.ops[1].index, 1);
  EXPECT_EQ(m->info.spec_version, 7);
}

TEST(MilProto, TruncatedVarintIsAFormatError) {
  // The model ends inside the specificationVersion varint.
  std::string data = "\x08\x96";
  const std::string msg = expect_format_error(parse(data));
  EXPECT_NE(msg.find("truncated varint"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset 1"), std::string::npos) << msg;
  // An 11-byte varint.
  data = "\x08" + std::string(10, '\xff') + "\x01";
  expect_format_error(parse(data));
}

TEST(MilProto, LengthPastEndNamesTheMessagePath) {
  // An op input whose argument claims 99999 bytes.
  Pb bad_arg;
  bad_arg.tag(1, 2);
  Pb::put_varint(bad_arg.b, 99999);
  Pb op;
  op.bytes(1, "relu").msg(2, entry("x", bad_arg));
  const std::string msg = expect_format_error(parse(model_with_ops({op})));
  EXPECT_NE(msg.find("Model.mlProgram.functions[main].block_specializations[CoreML6]"
                     ".operations[0].inputs[x]: field 1 length 99999 past end of message"),
            std::string::npos)
      << msg;
  // The offset is the tag of the bad field: find it independently in the encoded bytes.
  const std::string data = model_with_ops({op});
  const size_t at = data.find(bad_arg.b);
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(msg.find(fmt::format("offset {}:", at)), std::string::npos) << msg;
}

TEST(MilProto, DeepNestingIsRejected) {
  // tuple<tuple<...>> types nested 200 deep.
  Pb vt = tensor_vt(kInt32, {});
  for (int i = 0; i < 200; ++i) vt = Pb().msg(3, Pb().msg(1, vt));
  Pb op;
  op.bytes(1, "const").msg(3, named("c", vt));
  const std::string msg = expect_format_error(parse(model_with_ops({op})));
  EXPECT_NE(msg.find("nested deeper than"), std::string::npos) << msg;
}

TEST(MilProto, AbsurdDimensionsAreRejected) {
  // One dimension above 2^62, and a product that overflows int64.
  Pb op1;
  op1.bytes(1, "relu").msg(3, named("c", tensor_vt(kFp16, {uint64_t{1} << 62})));
  std::string msg = expect_format_error(parse(model_with_ops({op1})));
  // The wording every shape reader shares (shardgate/limits.h, tests/format/shape_limits_test).
  EXPECT_NE(msg.find("dimension 4611686018427387904 is out of range [0, 68719476736]"),
            std::string::npos)
      << msg;
  Pb op2;
  op2.bytes(1, "relu").msg(3, named("c", tensor_vt(kFp16, {1u << 30, 1u << 30, 1u << 30})));
  msg = expect_format_error(parse(model_with_ops({op2})));
  EXPECT_NE(msg.find("elements"), std::string::npos) << msg;
  // A rank that disagrees with the listed dimensions.
  Pb tt;
  tt.varint(1, kFp16).varint(2, 3).msg(3, Pb().msg(1, Pb().varint(1, 2)));
  Pb op3;
  op3.bytes(1, "relu").msg(3, named("c", Pb().msg(1, tt)));
  msg = expect_format_error(parse(model_with_ops({op3})));
  EXPECT_NE(msg.find("rank 3 but 1 dimensions"), std::string::npos) << msg;
  // Rank 33, declared (the rank field) and listed (33 dimensions without a rank field).
  Pb op4;
  op4.bytes(1, "relu").msg(3, named("c", tensor_vt(kFp16, std::vector<uint64_t>(33, 1))));
  msg = expect_format_error(parse(model_with_ops({op4})));
  EXPECT_NE(msg.find("rank 33 is out of range [0, 32]"), std::string::npos) << msg;
  Pb listed;
  listed.varint(1, kFp16);
  for (int i = 0; i < 33; ++i) listed.msg(3, Pb().msg(1, Pb().varint(1, 1)));
  Pb op5;
  op5.bytes(1, "relu").msg(3, named("c", Pb().msg(1, listed)));
  msg = expect_format_error(parse(model_with_ops({op5})));
  EXPECT_NE(msg.find("rank 33 or more is out of range [0, 32]"), std::string::npos) << msg;
}

TEST(MilProto, LiteralElementCountMustMatchTheType) {
  std::string msg = expect_format_error(parse(int32_const_model(Pb().varint(1, 1).varint(1, 2), 4)));
  EXPECT_NE(msg.find("2 values for tensor<int32, [4]>"), std::string::npos) << msg;
  // A huge declared shape with a tiny payload fails on the count, without allocating.
  msg = expect_format_error(parse(int32_const_model(Pb().varint(1, 1), uint64_t{1} << 34)));
  // fp16 bytes of the wrong length.
  msg = expect_format_error(parse(model_with_ops({const_op(
      "c", tensor_vt(kFp16, {2}), immediate(tensor_vt(kFp16, {2}), 7, Pb().bytes(1, "abc")))})));
  EXPECT_NE(msg.find("3 bytes for tensor<fp16, [2]> (4 bytes needed)"), std::string::npos) << msg;
}

TEST(MilProto, LiteralInTheWrongTensorValueFieldIsRejected) {
  Pb floats;
  floats.fixed32(1, 0);
  const std::string msg = expect_format_error(parse(model_with_ops(
      {const_op("c", tensor_vt(kFp16, {1}), immediate(tensor_vt(kFp16, {1}), 1, floats))})));
  EXPECT_NE(msg.find("stored in TensorValue.floats, expected TensorValue.bytes"),
            std::string::npos)
      << msg;
}

TEST(MilProto, NarrowedIntegersAreRangeChecked) {
  Pb ok;
  ok.varint(1, static_cast<uint64_t>(int64_t{-32768})).varint(1, 32767);
  Result<ProtoModel> m = parse(model_with_ops(
      {const_op("c", tensor_vt(kInt16, {2}), immediate(tensor_vt(kInt16, {2}), 2, ok))}));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const Tensor& t = m->program.functions[0].block.ops[0].attribute("val")->tensor;
  ASSERT_EQ(t.dtype(), DType::kI16);
  EXPECT_EQ(t.data<int16_t>()[0], -32768);
  EXPECT_EQ(t.data<int16_t>()[1], 32767);
  Pb bad;
  bad.varint(1, 40000);
  const std::string msg = expect_format_error(parse(model_with_ops(
      {const_op("c", tensor_vt(kInt16, {1}), immediate(tensor_vt(kInt16, {1}), 2, bad))})));
  EXPECT_NE(msg.find("does not fit int16"), std::string::npos) << msg;
}

TEST(MilProto, StructuralErrors) {
  // Group wire type.
  std::string data = "\x0b";  // field 1, wire type 3
  std::string msg = expect_format_error(parse(data));
  EXPECT_NE(msg.find("group"), std::string::npos) << msg;
  // Empty file.
  expect_format_error(parse(""));
  // Only a spec version: no program.
  msg = expect_format_error(parse(Pb().varint(1, 7).b));
  EXPECT_NE(msg.find("no mlProgram"), std::string::npos) << msg;
  // A block specialization for another opset only.
  Pb fn;
  fn.bytes(2, "CoreML8").msg(3, entry("CoreML6", Pb()));
  Pb program;
  program.varint(1, 1).msg(2, entry("main", fn));
  msg = expect_format_error(parse(Pb().varint(1, 9).msg(502, program).b));
  EXPECT_NE(msg.find("no block specialization for opset 'CoreML8' (have: CoreML6)"),
            std::string::npos)
      << msg;
  // An op output without a type.
  Pb op;
  op.bytes(1, "relu").msg(3, Pb().bytes(1, "y"));
  msg = expect_format_error(parse(model_with_ops({op})));
  EXPECT_NE(msg.find("'y' has no type"), std::string::npos) << msg;
  // A binding with neither name nor value.
  Pb op2;
  op2.bytes(1, "relu").msg(2, entry("x", Pb().msg(1, Pb())));
  msg = expect_format_error(parse(model_with_ops({op2})));
  EXPECT_NE(msg.find("inputs[x][0]"), std::string::npos) << msg;
}

TEST(MilProto, OtherModelTypesAreUnsupported) {
  // A neural network (field 500) instead of an ML program.
  Result<ProtoModel> m = parse(Pb().varint(1, 4).msg(500, Pb().varint(1, 1)).b);
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(m.status().message().find("field 500"), std::string::npos);
}

TEST(MilProto, TruncatedAndCorruptedCorpusNeverCrashes) {
  const std::string data = slurp(package_model("unified_palette_4bit"));
  ASSERT_GT(data.size(), 1000u);
  // Every strict prefix cuts the model (fields 1, 2, 502 in that order) and must fail cleanly.
  for (size_t cut = 0; cut < data.size(); cut += 53) {
    Result<ProtoModel> m = parse(data.substr(0, cut));
    ASSERT_FALSE(m.is_ok()) << "prefix of " << cut << " bytes parsed";
    EXPECT_EQ(m.status().code(), ErrorCode::kFormat) << m.status().message();
    EXPECT_NE(m.status().message().find("offset "), std::string::npos) << m.status().message();
  }
  // Random byte flips: any outcome but a crash (the sanitizer build checks for UB and leaks).
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pos(0, data.size() - 1);
  std::uniform_int_distribution<int> val(0, 255);
  int failures = 0;
  for (int round = 0; round < 300; ++round) {
    std::string mutated = data;
    for (int k = 0; k < 1 + round % 4; ++k) mutated[pos(rng)] = static_cast<char>(val(rng));
    Result<ProtoModel> m = parse(mutated);
    if (!m.is_ok()) {
      ++failures;
      EXPECT_NE(m.status().code(), ErrorCode::kInternal) << m.status().message();
    }
  }
  EXPECT_GT(failures, 0);
}

TEST(MilProto, TruncatedAndCorruptedFeaturesFixtureNeverCrashes) {
  // The hand-built model has the nested constructs (tuples, dicts, blocks, states) the corpus
  // lacks; cut it at every byte and corrupt it many times.
  const std::string data = slurp(kFixtures + "features.mlmodel");
  ASSERT_GT(data.size(), 1000u);
  for (size_t cut = 0; cut < data.size(); ++cut) {
    Result<ProtoModel> m = parse(data.substr(0, cut));
    if (!m.is_ok()) {
      EXPECT_NE(m.status().code(), ErrorCode::kInternal) << m.status().message();
      EXPECT_NE(m.status().message().find("offset "), std::string::npos) << m.status().message();
    }
  }
  std::mt19937 rng(99);
  std::uniform_int_distribution<size_t> pos(0, data.size() - 1);
  std::uniform_int_distribution<int> val(0, 255);
  for (int round = 0; round < 500; ++round) {
    std::string mutated = data;
    for (int k = 0; k < 1 + round % 3; ++k) mutated[pos(rng)] = static_cast<char>(val(rng));
    Result<ProtoModel> m = parse(mutated);
    if (!m.is_ok()) {
      EXPECT_NE(m.status().code(), ErrorCode::kInternal) << m.status().message();
    }
  }
}

}  // namespace
}  // namespace sg
